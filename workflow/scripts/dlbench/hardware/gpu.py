"""GPU memory and power from NVML (``nvidia-ml-py``), sampled beside the training process.

Power: where the GPU has an energy counter (``nvmlDeviceGetTotalEnergyConsumption``, Volta
and newer) the energy over the timed window is the counter's difference and the mean power is
energy / time; ``nvmlDeviceGetPowerUsage`` is itself a ~1 s average on recent GPUs, so it is
only the fallback (trapezoidal integration of the samples). Memory: per-process (the runner's
process tree, from ``nvmlDeviceGetComputeRunningProcesses``) and whole-device, both peaks.

Beside them, the thesis's quantities (seed 000 averaged ``nvidia-smi``'s 1 Hz readings over the whole run): each
GPU's mean device memory and mean power over every sample of the run, and, during a CPU run, the node's idle
GPUs' mean power (an idle probe: the GPUs the run does not use, sampled for their draw).

Each query is guarded: one NVML cannot answer (an old driver without the ``_v3`` process calls, a MIG device's
power) leaves that reading ``None`` and says why once (``GpuProbe.failures``), and the others go on. A MIG device
is named by its ``MIG-`` UUID as a GPU by its ``GPU-`` one.

``nvml`` is injectable so the code paths are tested with a fake on machines without a GPU.
"""
from __future__ import annotations

import itertools
import os


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _load_nvml():
    import pynvml  # nvidia-ml-py

    return pynvml


def _nvml_error(error: Exception) -> str:
    return f"NVML: {_text(error) or type(error).__name__}"


def _handle(nvml, ident: str):
    if ident.startswith(("GPU-", "MIG-")):
        return nvml.nvmlDeviceGetHandleByUUID(ident)
    if not ident.isdigit():
        raise ValueError(f"CUDA_VISIBLE_DEVICES names {ident!r}, neither an index nor a GPU- or MIG- UUID")
    return nvml.nvmlDeviceGetHandleByIndex(int(ident))


def inventory(nvml=None) -> tuple[list[str], str | None]:
    """The GPUs jobs on this node may use, by UUID, and why there are none if so.

    CUDA_VISIBLE_DEVICES, where a scheduler (Slurm) or the user set it, limits them; else all that
    NVML sees. UUIDs name a GPU the same way in every job, whatever each job's CUDA numbering, so
    they are what the node's GPU slots are keyed by and what CUDA_VISIBLE_DEVICES is set to.
    """
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    idents = [v.strip() for v in visible.split(",") if v.strip()] if visible is not None else None
    try:
        nvml = nvml or _load_nvml()
        nvml.nvmlInit()
    except Exception as error:  # noqa: BLE001 - missing library or driver
        return [], _nvml_error(error)
    try:
        if idents is None:
            idents = [str(index) for index in range(nvml.nvmlDeviceGetCount())]
        return [_text(nvml.nvmlDeviceGetUUID(_handle(nvml, ident))) for ident in idents], None
    except Exception as error:  # noqa: BLE001 - a device NVML cannot open
        return [], _nvml_error(error)
    finally:
        nvml.nvmlShutdown()


def visible_gpus(nvml=None) -> list[tuple[str, int]]:
    """The model and compute capability (times ten) of each GPU this process may use (:func:`inventory`), for
    frameworks that do not say which GPUs they see (MXNet, CNTK); none where NVML cannot tell."""
    uuids, _ = inventory(nvml)
    if not uuids:
        return []
    nvml = nvml or _load_nvml()
    nvml.nvmlInit()
    try:
        found = []
        for uuid in uuids:
            handle = _handle(nvml, uuid)
            major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
            found.append((_text(nvml.nvmlDeviceGetName(handle)), 10 * major + minor))
        return found
    finally:
        nvml.nvmlShutdown()


CPU_RUN = "CPU run (no GPU used)"


class GpuProbe:
    """NVML handles for the GPUs a job holds (UUIDs); ``error`` says why there are none. ``idle``: the GPUs are
    the node's, which a CPU run leaves idle (sampled for their idle draw; ``error`` is then :data:`CPU_RUN`)."""

    def __init__(self, uuids: list[str], nvml=None, idle: bool = False):
        self.nvml, self.handles, self.error, self.idle, self.idle_error = None, [], None, idle, None
        self.failures: dict[str, str] = {}  # a reading's first NVML error: the reason it is not measured
        if not uuids:
            self.error = CPU_RUN
            return
        try:
            self.nvml = nvml or _load_nvml()
            self.nvml.nvmlInit()
            self.handles = [_handle(self.nvml, uuid) for uuid in uuids]
        except Exception as error:  # noqa: BLE001 - missing library, driver or device
            self.error = _nvml_error(error)
            self.handles = []
        if idle:
            self.idle_error, self.error = self.error, CPU_RUN

    @classmethod
    def idle_gpus(cls, nvml=None) -> GpuProbe:
        """The node's GPUs (those this job may see) as a CPU run leaves them; ``idle_error`` says why there are
        none to sample."""
        uuids, error = inventory(nvml)
        probe = cls(uuids, nvml, idle=True)
        probe.idle_error = error or probe.idle_error or (
            None if uuids else "no GPU on this node (or none visible to this job)")
        return probe

    def _read(self, field: str, query, *arguments):
        """``query(*arguments)``, or None where NVML cannot answer it, its first error kept for ``field``."""
        try:
            return query(*arguments)
        except Exception as error:  # noqa: BLE001 - NVML's errors are its own exception classes
            self.failures.setdefault(field, f"not measured: {_nvml_error(error)}")
            return None

    def describe(self) -> list[dict]:
        """Each GPU held: its index, UUID, model, memory and the node's driver and the CUDA version it supports
        (a field NVML cannot give, as a MIG device's index: None)."""
        if not self.handles:
            return []
        driver = self._read("driver", self.nvml.nvmlSystemGetDriverVersion)
        cuda = self._read("cuda", self.nvml.nvmlSystemGetCudaDriverVersion)  # 13000: CUDA 13.0
        described = []
        for handle in self.handles:
            uuid, name = (self._read(field, query, handle) for field, query in (
                ("uuid", self.nvml.nvmlDeviceGetUUID), ("name", self.nvml.nvmlDeviceGetName)))
            memory = self._read("memory", self.nvml.nvmlDeviceGetMemoryInfo, handle)
            described.append({"index": self._read("index", self.nvml.nvmlDeviceGetIndex, handle),
                              "uuid": None if uuid is None else _text(uuid),
                              "name": None if name is None else _text(name),
                              "driver": None if driver is None else _text(driver),
                              "cuda": None if cuda is None else f"{cuda // 1000}.{cuda % 1000 // 10}",
                              "memory_mib": None if memory is None else memory.total / 2**20})
        return described

    def sample(self, now: float, pids: set[int]) -> list[dict]:
        """One reading per GPU: time, power (W), device memory and the run's processes' memory (MiB; None where NVML
        lists none of ``pids``), energy (J), and how many processes computed on it (the run's and any other's).
        A reading NVML cannot give is None (``failures`` says why)."""
        readings = []
        for handle in self.handles:
            energy = self._read("energy_j", self.nvml.nvmlDeviceGetTotalEnergyConsumption, handle)  # Volta on
            power = self._read("power_w", self.nvml.nvmlDeviceGetPowerUsage, handle)
            memory = self._read("device_mib", self.nvml.nvmlDeviceGetMemoryInfo, handle)
            processes = self._read("processes", self.nvml.nvmlDeviceGetComputeRunningProcesses, handle)
            own = [p.usedGpuMemory for p in processes or [] if p.pid in pids and p.usedGpuMemory is not None]
            readings.append({
                "time": now,
                "power_w": None if power is None else power / 1000,
                "device_mib": None if memory is None else memory.used / 2**20,
                "process_mib": sum(own) / 2**20 if own else None,
                "energy_j": None if energy is None else energy / 1000,
                "processes": None if processes is None else len(processes),
            })
        return readings

    def close(self) -> None:
        if self.handles:
            self.nvml.nvmlShutdown()


# The thesis's quantities: each GPU's mean over every sample of the run (per GPU, and their sum)
RUN_MEANS = {"memory": ("gpu_device_mean_mib", "device_mib"), "power": ("gpu_run_mean_w", "power_w")}
IDLE_POWER = "idle_gpu_mean_w"
IDLE_SAMPLE_SECONDS = 1.0  # a CPU run's idle GPUs are read once a second, as the thesis read nvidia-smi's
NOT_IDLE = "a GPU run: its GPUs are not idle"
# The timed window's power, from its samples alone
WINDOW_POWER = ("gpu_mean_w", "gpu_peak_w", "gpu_energy_j", "energy_per_image_j")


def per_gpu_means(samples: list[list[dict]], field: str) -> list[float] | None:
    """Each GPU's mean of ``field`` over every tick that has it (the plain mean of readings, as the thesis averaged
    nvidia-smi's); None where a GPU has no such reading."""
    means = []
    for gpu in range(len(samples[0])):
        values = [tick[gpu][field] for tick in samples if tick[gpu][field] is not None]
        if not values:
            return None
        means.append(sum(values) / len(values))
    return means


def _tick_sums(samples: list[list[dict]], field: str) -> list[float]:
    """Per tick, the sum over the GPUs of ``field``, for the ticks where every GPU has it."""
    return [sum(reading[field] for reading in tick) for tick in samples
            if all(reading[field] is not None for reading in tick)]


def _with_means(block: dict, field: str, means: list[float] | None, reason: str | None) -> dict:
    block.update({field: sum(means) if means else None, f"{field}_per_gpu": means or None})
    if not means:
        block.setdefault("reasons", {}).update(dict.fromkeys((field, f"{field}_per_gpu"), reason))
    return block


def _unread(failures: dict, field: str) -> str:
    return failures.get(field) or f"not measured: no GPU sample has its {field}"


def idle_power(samples: list[list[dict]], error: str | None,
               failures: dict | None = None) -> tuple[list[float] | None, str | None]:
    """The node's GPUs' mean power per GPU over a CPU run, and why there is none: no GPU, a GPU on which some
    process computed during the run (it was not idle), or a GPU NVML could not tell that of."""
    failures = failures or {}
    if error or not samples:
        return None, error or "no GPU samples were taken"
    if any(reading["processes"] is None for tick in samples for reading in tick):
        return None, f"whether the GPUs were idle is {_unread(failures, 'processes')}"
    busy = sorted({gpu for tick in samples for gpu, reading in enumerate(tick) if reading["processes"]})
    if busy:
        return None, (f"the node's GPU {', '.join(map(str, busy))} ran a process during this CPU run (another "
                      "job's?): not idle")
    means = per_gpu_means(samples, "power_w")
    return means, None if means else _unread(failures, "power_w")


def _process_memory_reason(samples: list[list[dict]], failures: dict) -> str:
    """Why no sample holds the run's processes' GPU memory: NVML could not list processes, or listed none of the
    run's (PIDs of another namespace: a container's; MPS), or none at all."""
    if "processes" in failures:
        return failures["processes"]
    listed = max((reading["processes"] or 0 for tick in samples for reading in tick), default=0)
    if listed:
        return (f"not measured: NVML listed up to {listed} compute process(es) on the run's GPUs and none of the "
                "run's (their PIDs are another namespace's, a container's, or behind MPS)")
    return "not measured: NVML listed no compute process on the run's GPUs"


def memory_and_power(samples: list[list[dict]], window: tuple[float, float] | None, images: int | None,
                     error: str | None, idle_error: str | None = None,
                     failures: dict | None = None) -> tuple[dict, dict]:
    """Memory and power blocks of the record from per-tick readings (one list per tick). A CPU run's (``error``
    :data:`CPU_RUN`) samples are its node's idle GPUs' (``idle_error``: why there are none). ``failures``: why a
    reading is missing (:attr:`GpuProbe.failures`)."""
    failures = failures or {}
    memory = {"gpu_process_peak_mib": None, "gpu_device_peak_mib": None}
    power = {**dict.fromkeys(WINDOW_POWER), "method": None}
    if error or not samples:
        reason = error or "no GPU samples were taken"
        memory, power = {**memory, "reasons": dict.fromkeys(memory, reason)}, {
            **power, "reasons": dict.fromkeys(WINDOW_POWER, reason)}
        for block, (field, _) in ((memory, RUN_MEANS["memory"]), (power, RUN_MEANS["power"])):
            _with_means(block, field, None, reason)
        if error == CPU_RUN:
            return memory, _with_means(power, IDLE_POWER, *idle_power(samples, idle_error, failures))
        return memory, _with_means(power, IDLE_POWER, None, NOT_IDLE)
    memory["reasons"], power["reasons"] = {}, {}
    for block, (field, reading) in ((memory, RUN_MEANS["memory"]), (power, RUN_MEANS["power"])):
        _with_means(block, field, per_gpu_means(samples, reading), _unread(failures, reading))
    _with_means(power, IDLE_POWER, None, NOT_IDLE)
    # The run's processes: per tick the GPUs that list one of them
    process = [sum(reading["process_mib"] for reading in tick if reading["process_mib"] is not None)
               for tick in samples if any(reading["process_mib"] is not None for reading in tick)]
    memory["gpu_process_peak_mib"] = max(process) if process else None
    if not process:
        memory["reasons"]["gpu_process_peak_mib"] = _process_memory_reason(samples, failures)
    device = _tick_sums(samples, "device_mib")
    memory["gpu_device_peak_mib"] = max(device) if device else None
    if not device:
        memory["reasons"]["gpu_device_peak_mib"] = _unread(failures, "device_mib")
    inside = [tick for tick in samples if window and window[0] <= tick[0]["time"] <= window[1]]
    if len(inside) < 2:
        reason = "fewer than 2 GPU samples inside the timed window"
        power["reasons"].update(dict.fromkeys(WINDOW_POWER, reason))
        return memory, power
    drawn = _tick_sums(inside, "power_w")
    power["gpu_peak_w"] = max(drawn) if drawn else None
    if not drawn:
        power["reasons"]["gpu_peak_w"] = _unread(failures, "power_w")
    span = inside[-1][0]["time"] - inside[0][0]["time"]
    if all(r["energy_j"] is not None for tick in (inside[0], inside[-1]) for r in tick):
        energy = sum(inside[-1][i]["energy_j"] - inside[0][i]["energy_j"] for i in range(len(inside[0])))
        power["method"] = "energy counter"
        if energy <= 0 and (power["gpu_peak_w"] is None or power["gpu_peak_w"] > 0):  # an H200's, over 0.1 s
            reason = f"NVML's energy counter did not advance over the timed window's {span:.2f} s: too short to measure"
            power.update(dict.fromkeys(WINDOW_POWER))
            power["reasons"].update(dict.fromkeys(WINDOW_POWER, reason))
            return memory, power
    elif len(drawn) == len(inside):
        energy = sum((b[i]["time"] - a[i]["time"]) * (a[i]["power_w"] + b[i]["power_w"]) / 2
                     for a, b in itertools.pairwise(inside) for i in range(len(a)))
        power["method"] = "integrated power samples"
    else:
        reason = f"{_unread(failures, 'power_w')} (and the energy counter: {_unread(failures, 'energy_j')})"
        power["reasons"].update({field: reason for field in WINDOW_POWER if power[field] is None})
        return memory, power
    power["gpu_mean_w"] = energy / span if span > 0 else None
    if power["gpu_mean_w"] is not None:
        window_seconds = window[1] - window[0]
        power["gpu_energy_j"] = power["gpu_mean_w"] * window_seconds
        power["energy_per_image_j"] = power["gpu_energy_j"] / images if images else None
    return memory, power
