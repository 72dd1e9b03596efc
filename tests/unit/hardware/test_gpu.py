"""NVML sampling code paths, with a fake NVML (this machine has no GPU)."""
from types import SimpleNamespace

import pytest
from dlbench.hardware import gpu
from dlbench.record.build import series
from dlbench.spec import RunSpec


class FakeNVMLError(Exception):
    pass


class FakeNVML:
    """Two GPUs; power and energy follow a clock the test advances; PID 42 uses 1 GiB on GPU 0."""

    def __init__(self, watts=(200.0, 100.0), energy_counter=True, fail_init=False, busy=True):
        self.watts, self.energy_counter, self.fail_init, self.now = watts, energy_counter, fail_init, 0.0
        self.shut, self.busy = False, busy

    def nvmlInit(self):
        if self.fail_init:
            raise FakeNVMLError("Driver Not Loaded")

    def nvmlShutdown(self):
        self.shut = True

    def nvmlDeviceGetCount(self):
        return len(self.watts)

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid):
        return int(uuid.removeprefix("GPU-fake-"))

    def nvmlDeviceGetIndex(self, handle):
        return handle

    def nvmlDeviceGetUUID(self, handle):
        return f"GPU-fake-{handle}"

    def nvmlDeviceGetName(self, handle):
        return b"Fake P100"

    def nvmlDeviceGetCudaComputeCapability(self, handle):
        return 6, 0

    def nvmlSystemGetDriverVersion(self):
        return "550.1"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12040

    def nvmlDeviceGetPowerUsage(self, handle):
        return self.watts[handle] * 1000  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        if not self.energy_counter:
            raise FakeNVMLError("Not Supported")
        return self.watts[handle] * self.now * 1000  # mJ since "boot"

    def nvmlDeviceGetMemoryInfo(self, handle):
        return type("Memory", (), {"used": (3 + handle) * 2**30, "total": 80 * 2**30})()

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        proc = lambda pid, mib: type("Process", (), {"pid": pid, "usedGpuMemory": mib * 2**20})()
        if not self.busy:
            return []
        return [proc(42, 1024), proc(7, 512)] if handle == 0 else [proc(7, 256)]


def sample_run(nvml, seconds=10, hz=10, probe=None):
    probe = probe or gpu.GpuProbe(["GPU-fake-0", "GPU-fake-1"], nvml)
    ticks = []
    for step in range(seconds * hz + 1):
        nvml.now = step / hz
        ticks.append(probe.sample(nvml.now, pids={42}))
    return probe, ticks


@pytest.mark.parametrize("energy_counter,method", [(True, "energy counter"), (False, "integrated power samples")])
def test_power_and_energy_over_the_timed_window(energy_counter, method):
    probe, ticks = sample_run(FakeNVML(energy_counter=energy_counter))
    memory, power = gpu.memory_and_power(ticks, window=(2.0, 8.0), images=600, error=probe.error)
    assert power["method"] == method
    assert power["gpu_mean_w"] == pytest.approx(300.0)  # both GPUs of the job together
    assert power["gpu_peak_w"] == pytest.approx(300.0)
    assert power["gpu_energy_j"] == pytest.approx(300.0 * 6)
    assert power["energy_per_image_j"] == pytest.approx(3.0)
    assert memory["gpu_process_peak_mib"] == pytest.approx(1024)  # only the runner's PID counts
    assert memory["gpu_device_peak_mib"] == pytest.approx(7 * 1024)
    assert probe.describe()[1] == {"index": 1, "uuid": "GPU-fake-1", "name": "Fake P100", "driver": "550.1",
                                   "cuda": "12.4", "memory_mib": 80 * 1024}


def test_an_energy_counter_that_did_not_advance_gives_no_power_not_zero_watts():
    """An H200's counter stood still over a 0.1 s timed window while the GPU drew 134 W: no figure, a reason."""
    nvml = FakeNVML()
    probe, ticks = sample_run(nvml)
    for tick in ticks:
        for reading in tick:
            reading["energy_j"] = 1000.0  # between two of the counter's updates
    memory, power = gpu.memory_and_power(ticks, window=(2.0, 2.3), images=64, error=probe.error)
    assert all(power[field] is None for field in gpu.WINDOW_POWER) and memory["gpu_process_peak_mib"] == 1024
    assert power["reasons"]["gpu_mean_w"] == ("NVML's energy counter did not advance over the timed window's "
                                              "0.30 s: too short to measure")
    assert power["gpu_run_mean_w"] == pytest.approx(300.0)  # the whole run's samples still stand


def test_the_thesis_memory_and_power_are_each_gpus_means_over_the_whole_run():
    probe, ticks = sample_run(FakeNVML())
    memory, power = gpu.memory_and_power(ticks, window=(2.0, 8.0), images=600, error=probe.error)
    assert memory["gpu_device_mean_mib_per_gpu"] == pytest.approx([3 * 1024, 4 * 1024])  # every process's
    assert memory["gpu_device_mean_mib"] == pytest.approx(7 * 1024)
    assert power["gpu_run_mean_w_per_gpu"] == pytest.approx([200.0, 100.0]) and power["gpu_run_mean_w"] == 300.0
    assert power["idle_gpu_mean_w"] is None and power["reasons"]["idle_gpu_mean_w"] == gpu.NOT_IDLE


def test_a_cpu_run_reads_the_idle_draw_of_its_nodes_gpus(monkeypatch):
    """The thesis's GPU power of a CPU run (28-33 W): the node's GPUs while no process computes on them."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    probe = gpu.GpuProbe.idle_gpus(FakeNVML(busy=False))
    assert probe.idle and probe.error == gpu.CPU_RUN and len(probe.handles) == 2
    _, ticks = sample_run(probe.nvml, probe=probe)
    memory, power = gpu.memory_and_power(ticks, (2.0, 8.0), 600, probe.error, probe.idle_error)
    assert power["idle_gpu_mean_w"] == 300.0 and power["idle_gpu_mean_w_per_gpu"] == pytest.approx([200.0, 100.0])
    assert power["gpu_mean_w"] is None and power["reasons"]["gpu_run_mean_w"] == gpu.CPU_RUN
    assert memory["gpu_device_mean_mib"] is None and memory["reasons"]["gpu_device_peak_mib"] == gpu.CPU_RUN
    busy = gpu.GpuProbe.idle_gpus(FakeNVML(busy=True))  # another job computes on both
    _, ticks = sample_run(busy.nvml, probe=busy)
    _, power = gpu.memory_and_power(ticks, (2.0, 8.0), 600, busy.error, busy.idle_error)
    assert power["idle_gpu_mean_w"] is None
    assert power["reasons"]["idle_gpu_mean_w"].startswith("the node's GPU 0, 1 ran a process during this CPU run")
    for nvml, visible, why in ((FakeNVML(fail_init=True), None, "NVML: Driver Not Loaded"),
                               (FakeNVML(), "", "no GPU on this node (or none visible to this job)")):
        if visible is not None:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        none = gpu.GpuProbe.idle_gpus(nvml)
        _, power = gpu.memory_and_power([], None, None, none.error, none.idle_error)
        assert none.handles == [] and power["reasons"]["idle_gpu_mean_w"] == why


def test_without_nvml_every_gpu_field_is_null_with_a_reason():
    probe = gpu.GpuProbe(["GPU-fake-0"], FakeNVML(fail_init=True))
    assert probe.error == "NVML: Driver Not Loaded"
    memory, power = gpu.memory_and_power([], window=(0, 1), images=10, error=probe.error)
    assert memory["gpu_process_peak_mib"] is None and power["gpu_mean_w"] is None
    assert memory["reasons"]["gpu_device_peak_mib"] == probe.error
    assert power["reasons"]["energy_per_image_j"] == probe.error


def test_cpu_runs_do_not_touch_nvml():
    probe = gpu.GpuProbe([], FakeNVML(fail_init=True))
    assert probe.error == "CPU run (no GPU used)" and probe.handles == []


def test_a_window_shorter_than_two_samples_says_so():
    _, ticks = sample_run(FakeNVML(), seconds=1, hz=10)
    memory, power = gpu.memory_and_power(ticks, window=(0.51, 0.55), images=8, error=None)
    assert memory["gpu_process_peak_mib"] == pytest.approx(1024)
    assert power["gpu_mean_w"] is None and "fewer than 2 GPU samples" in power["reasons"]["gpu_mean_w"]


@pytest.mark.parametrize("visible,uuids", [(None, ["GPU-fake-0", "GPU-fake-1"]), ("1", ["GPU-fake-1"]),
                                            ("", [])])
def test_the_node_inventory_is_what_the_scheduler_left_visible_by_uuid(monkeypatch, visible, uuids):
    if visible is None:
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    else:
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    assert gpu.inventory(FakeNVML()) == (uuids, None)


def test_without_nvml_the_node_has_no_gpus_and_says_why(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu.inventory(FakeNVML(fail_init=True)) == ([], "NVML: Driver Not Loaded")


def test_the_gpus_a_process_may_use_with_their_compute_capability(monkeypatch):
    """For the frameworks that do not say which GPUs they see (MXNet, CNTK): NVML's, as the scheduler left them."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-fake-1")
    assert gpu.visible_gpus(FakeNVML()) == [("Fake P100", 60)]
    assert gpu.visible_gpus(FakeNVML(fail_init=True)) == []


def test_every_gpu_sample_is_kept_per_gpu_in_the_series():
    """The series beside a record keep each GPU's samples whole (the thesis's 1 Hz means, or any other
    definition, can be computed from them later)."""
    _, ticks = sample_run(FakeNVML(energy_counter=True), seconds=2, hz=5)
    sampler = SimpleNamespace(host_samples=[], gpu_samples=ticks, probe=gpu.GpuProbe([]))
    spec = RunSpec(framework="pytorch", dataset="mnist-synthetic", network="lenet", device="gpu2", repetition=1,
                   batch_size_global=8, iterations=4, warmup_iterations=1, learning_rate=0.01, threads=2)
    kept = series({"network": "lenet"}, spec, {}, sampler)
    assert [len(one["time"]) for one in kept["gpus"]] == [11, 11] and kept["profile"] is None
    assert kept["gpus"][1]["power_w"] == [tick[1]["power_w"] for tick in ticks]
    assert kept["gpus"][0]["process_mib"][0] == 1024 and kept["gpus"][1]["device_mib"][0] == 4 * 1024
    assert kept["gpus"][0]["processes"][0] == 2 and kept["gpus_idle"] is False


class OldDriverNVML(FakeNVML):
    """nvidia-ml-py 13 on a driver without its _v3 process query: every process listing fails."""

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        raise FakeNVMLError("Function Not Found")


def test_a_query_nvml_cannot_answer_is_null_with_its_error_and_the_sampler_goes_on(monkeypatch):
    """A real sampler thread over an old driver: its GPU samples go on without the process list; the run's process
    memory and whether its GPUs were idle are not measured, saying NVML's error; power and device memory are."""
    import os
    import time

    from dlbench.hardware import host
    from dlbench.hardware.sampler import Sampler

    nvml = OldDriverNVML(energy_counter=False)  # nothing advances the fake's clock: power is integrated
    probe = gpu.GpuProbe(["GPU-fake-0", "GPU-fake-1"], nvml)
    sampler = Sampler(os.getpid(), probe, 50, [], host.Rapl())
    sampler.start()
    while len(sampler.gpu_samples) < 5:
        assert sampler.is_alive()
        time.sleep(0.02)
    sampler.stop()
    ticks = sampler.gpu_samples
    assert probe.failures == {"processes": "not measured: NVML: Function Not Found",
                              "energy_j": "not measured: NVML: Not Supported"}
    window = (ticks[0][0]["time"], ticks[-1][0]["time"])
    memory, power = gpu.memory_and_power(ticks, window, 100, probe.error, failures=probe.failures)
    assert memory["gpu_process_peak_mib"] is None
    assert memory["reasons"]["gpu_process_peak_mib"] == "not measured: NVML: Function Not Found"
    assert memory["gpu_device_peak_mib"] == pytest.approx(7 * 1024) and power["gpu_peak_w"] == pytest.approx(300.0)
    idle = gpu.GpuProbe.idle_gpus(OldDriverNVML())
    _, idle_ticks = sample_run(idle.nvml, seconds=2, probe=idle)
    _, power = gpu.memory_and_power(idle_ticks, None, None, idle.error, idle.idle_error, idle.failures)
    assert power["idle_gpu_mean_w"] is None
    assert power["reasons"]["idle_gpu_mean_w"] == "whether the GPUs were idle is not measured: NVML: Function Not Found"


def test_process_memory_whose_pids_nvml_cannot_match_is_null_with_why_never_zero():
    """A container with its own PID namespace (or MPS): NVML lists processes, none with the run's PIDs."""
    nvml = FakeNVML()
    probe = gpu.GpuProbe(["GPU-fake-0", "GPU-fake-1"], nvml)
    ticks = [probe.sample(t / 10, pids={4242}) for t in range(30)]
    memory, _ = gpu.memory_and_power(ticks, (0.5, 2.5), 100, probe.error, failures=probe.failures)
    assert memory["gpu_process_peak_mib"] is None and all(r["process_mib"] is None for tick in ticks for r in tick)
    assert memory["reasons"]["gpu_process_peak_mib"] == (
        "not measured: NVML listed up to 2 compute process(es) on the run's GPUs and none of the run's (their PIDs "
        "are another namespace's, a container's, or behind MPS)")
    none = gpu.GpuProbe(["GPU-fake-0"], FakeNVML(busy=False))
    memory, _ = gpu.memory_and_power([none.sample(t, {1}) for t in range(3)], (0, 2), 10, none.error)
    assert memory["reasons"]["gpu_process_peak_mib"] == "not measured: NVML listed no compute process on the run's GPUs"


class MigNVML(FakeNVML):
    """One MIG instance: named by its MIG- UUID, no index of its own, no power reading."""

    def nvmlDeviceGetHandleByUUID(self, uuid):
        assert uuid == "MIG-5c1b4d2e-0000-0000-0000-000000000001"
        return 0

    def nvmlDeviceGetUUID(self, handle):
        return "MIG-5c1b4d2e-0000-0000-0000-000000000001"

    def nvmlDeviceGetIndex(self, handle):
        raise FakeNVMLError("Invalid Argument")

    def nvmlDeviceGetPowerUsage(self, handle):
        raise FakeNVMLError("Not Supported")

    def nvmlDeviceGetTotalEnergyConsumption(self, handle):
        raise FakeNVMLError("Not Supported")


def test_a_mig_device_is_measured_through_its_uuid_and_its_power_is_not_measured_by_name(monkeypatch,
                                                                                           record_schema):
    import jsonschema

    mig = "MIG-5c1b4d2e-0000-0000-0000-000000000001"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", mig)
    assert gpu.inventory(MigNVML()) == ([mig], None)
    probe = gpu.GpuProbe([mig], MigNVML())
    described = probe.describe()
    assert described[0]["uuid"] == mig and described[0]["index"] is None and described[0]["memory_mib"] == 80 * 1024
    jsonschema.validate(described, record_schema["$defs"]["gpus"])
    ticks = [probe.sample(t / 10, pids={42}) for t in range(30)]
    memory, power = gpu.memory_and_power(ticks, (0.5, 2.5), 100, probe.error, failures=probe.failures)
    assert memory["gpu_process_peak_mib"] == 1024 and memory["gpu_device_peak_mib"] == 3 * 1024
    assert all(power[field] is None for field in gpu.WINDOW_POWER) and power["gpu_run_mean_w"] is None
    assert power["reasons"]["gpu_mean_w"] == ("not measured: NVML: Not Supported (and the energy counter: not "
                                              "measured: NVML: Not Supported)")
    assert power["reasons"]["gpu_run_mean_w"] == "not measured: NVML: Not Supported"
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "first-gpu")
    refused = "NVML: CUDA_VISIBLE_DEVICES names 'first-gpu', neither an index nor a GPU- or MIG- UUID"
    assert gpu.inventory(FakeNVML()) == ([], refused)


class LostMidRunNVML(FakeNVML):
    """GPU 1 falls off the bus after the fifth reading of its power: NVML answers every later query about it with
    an error, while GPU 0 goes on."""

    def __init__(self):
        super().__init__(energy_counter=False)
        self.power_reads = 0

    def nvmlDeviceGetPowerUsage(self, handle):
        if handle == 1:
            self.power_reads += 1
            if self.power_reads > 5:
                raise FakeNVMLError("GPU is lost")
        return super().nvmlDeviceGetPowerUsage(handle)


def test_a_gpu_lost_mid_run_keeps_the_samples_before_and_says_why_its_window_power_is_missing():
    nvml = LostMidRunNVML()
    probe, ticks = sample_run(nvml, seconds=2)
    assert [tick[1]["power_w"] for tick in ticks[:5]] == [100.0] * 5 and ticks[5][1]["power_w"] is None
    assert ticks[-1][0]["power_w"] == 200.0 and probe.failures == {"power_w": "not measured: NVML: GPU is lost",
                                                                    "energy_j": "not measured: NVML: Not Supported"}
    memory, power = gpu.memory_and_power(ticks, (1.0, 2.0), 100, probe.error, failures=probe.failures)
    assert power["gpu_run_mean_w_per_gpu"] == pytest.approx([200.0, 100.0])  # each GPU's samples that it gave
    assert power["gpu_mean_w"] is None and power["gpu_peak_w"] is None
    assert power["reasons"]["gpu_mean_w"] == ("not measured: NVML: GPU is lost (and the energy counter: not measured: "
                                              "NVML: Not Supported)")
    assert memory["gpu_device_peak_mib"] == pytest.approx(7 * 1024)  # memory still read
