"""A run's record: what the monitor builds from the runner's result, its samples and the node, and writes;
how the tables read it back, a record of an older schema upgraded to today's
(``workflow/schemas/run_record.schema.yaml``; its changes in CHANGELOG.md)."""
from __future__ import annotations

import functools
import json
import math
import os
import platform
import re
import socket
import statistics
import subprocess
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import jsonschema
import psutil
import yaml
from jsonschema.exceptions import best_match

from . import backends, compute, currency, files, host, peaks
from .gpu import GpuProbe, memory_and_power
from .paths import PACKAGE_ROOT, PROJECT_ROOT
from .peaks import Peak
from .spec import SETUP_FIELDS, RunSpec, placement_label, run_variant
from .tasks.accuracy import accuracy_block
from .tasks.inference import latency
from .tasks.profile import layer_profile

if TYPE_CHECKING:
    from .monitor import Sampler

SCHEMA_VERSION = 6


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def dlbench_version() -> str:
    """The workflow's version, from its pyproject.toml (CHANGELOG.md says what each changed)."""
    with open(PROJECT_ROOT / "pyproject.toml", "rb") as stream:
        return tomllib.load(stream)["project"]["version"]


def git_commit() -> str | None:
    """The code's commit, with "-dirty" when the working tree has uncommitted changes."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=40"], cwd=PACKAGE_ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def setup_times(result: dict, times: list[float], warmup: int) -> dict:
    """Where an ok run's time before its timed window went: the runner's start (interpreter, dlbench),
    the framework's import, the build of model and input pipeline (their sum: ``setup_seconds``),
    then the first step (compilation, autotuning) and the whole warm-up."""
    if not times:
        return dict.fromkeys(SETUP_FIELDS)
    start = result["entered_epoch"] - result["launched_epoch"]
    return {"start_seconds": start, "import_seconds": result["import_seconds"],
            "build_seconds": result["build_seconds"],
            "setup_seconds": start + result["import_seconds"] + result["build_seconds"],
            "first_step_seconds": times[0], "warmup_seconds": sum(times[:warmup])}


def build_record(spec: RunSpec, result: dict, sampler: Sampler | None, probe: GpuProbe,
                 config_sha256: str, ceiling: dict | None = None) -> dict:
    ok = result["status"] == "ok"
    not_ok = None if ok else f"see the run's reason ({result['status']})"  # not repeated in every metric
    times = result.get("iteration_seconds") or []
    window = result.get("timed_window") or {}
    timed = times[spec.warmup_iterations:]
    images = spec.batch_size_global * len(timed)
    timing = {
        "iteration_seconds": times,
        "images_per_second_mean": images / window["seconds"] if ok else None,
        "images_per_second_median": spec.batch_size_global / statistics.median(timed) if ok else None,
        "timed_seconds": window.get("seconds"),
        "wall_seconds": None,
        "cpu_per_wall": window["cpu_seconds"] / window["seconds"] if ok else None,
        "step_completion": result.get("step_completion"),
        **setup_times(result, times if ok else [], spec.warmup_iterations),
    }
    window_span = (window["start_epoch"], window["end_epoch"]) if ok else None
    host_samples = sampler.host_samples if sampler else []
    waited = window.get("input_wait_seconds") if ok and spec.task != "inference" else None  # inference: none
    timing.update(input_wait_seconds=waited, input_wait_share=None if waited is None else waited / window["seconds"])
    # A run over nodes: its processes are nowhere in this node's samples, and its other work is no other work
    unsampled = result.get("unsampled")
    timing["contention_share"], contention_reason = (None, unsampled) if unsampled else host.contention_share(
        host_samples, window_span, len(sampler.cores) if sampler else 0)
    gpu_memory, power = memory_and_power(sampler.gpu_samples if sampler else [], window_span, images, probe.error,
                                         probe.idle_error)
    if unsampled and spec.gpus:
        for block in (gpu_memory, power):
            block["reasons"] = {**block.get("reasons", {}),
                                **{k: not_ok or unsampled for k, v in block.items() if v is None and k != "method"}}
    allocator = result.get("framework_allocator_peak_mib")
    memory = {"host_peak_rss_mib": sampler.rss_peak_mib if sampler and sampler.ticks else None,
              **{k: v for k, v in gpu_memory.items() if k != "reasons"},
              "framework_allocator_peak_mib": allocator}
    memory["reasons"] = dict(gpu_memory.get("reasons", {}))
    if memory["host_peak_rss_mib"] is None:
        memory["reasons"]["host_peak_rss_mib"] = not_ok or unsampled or "no host samples"
    if allocator is None:
        memory["reasons"]["framework_allocator_peak_mib"] = not_ok or (
            probe.error if spec.gpus == 0 else "the framework reports no allocator peak")
    cpu_joules, cpu_reason = host.cpu_energy(host_samples, window_span, sampler.rapl if sampler else host.Rapl())
    power.update(samples=sampler.ticks if sampler else 0, sample_hz=sampler.achieved_hz if sampler else None,
                 cpu_energy_j=cpu_joules, cpu_energy_per_image_j=None if cpu_joules is None else cpu_joules / images)
    if cpu_joules is None:
        power.setdefault("reasons", {}).update(dict.fromkeys(("cpu_energy_j", "cpu_energy_per_image_j"),
                                                             not_ok or unsampled or cpu_reason))
    if not ok:
        timing["reasons"] = {k: not_ok for k, v in timing.items() if v is None and k != "wall_seconds"}
    else:
        unseen = (f"{spec.framework}'s training step takes its batch itself, out of the loop's sight"
                  if spec.task != "inference" else "inference runs on a resident batch: it never waits for input")
        timing["reasons"] = {k: why for k, why in (
            ("input_wait_seconds", unseen), ("contention_share", contention_reason)) if timing[k] is None}
        if waited is None:
            timing["reasons"]["input_wait_share"] = timing["reasons"]["input_wait_seconds"]
    gpus = probe.describe() if probe.handles and not probe.idle else []
    return {
        "schema": SCHEMA_VERSION,
        "run": spec.record_block(result.get("framework_version")),
        "status": result["status"],
        "reason": result["reason"],
        "execution": {**backends.execution(spec), "data_parallel": result.get("data_parallel"),
                      "nodes": result.get("nodes"), "nodes_share_machine": result.get("nodes_share_machine")},
        "timing": timing,
        "memory": memory,
        "power": power,
        "compute": compute.block(spec, timing["images_per_second_mean"], ceiling, socket.gethostname(), gpus, not_ok,
                                 peaks.device_peak(bool(spec.gpus), gpus, spec.precision, spec.threads)),
        "latency": latency(spec, result, not_ok),
        "quality": quality(spec, result, not_ok),
        "profile": layer_profile(spec, result, not_ok),
        "provenance": {
            "hostname": socket.gethostname(), "cpu_model": cpu_model(), "cores": os.cpu_count(),
            "sockets": host.sockets(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "gpus": gpus,
            "idle_gpus": probe.describe() if probe.handles and probe.idle else [],  # a CPU run's idle draw's GPUs
            "python": result.get("python"), "packages": result.get("packages", {}),
            "framework_build": result.get("framework_build"),  # cpu or cuda <version>
            "gpu_code": result.get("gpu_code"),  # how the GPUs ran the build's code (backends.check_gpu_code)
            "monitor_python": platform.python_version(),
            "config_sha256": config_sha256, "dlbench_version": dlbench_version(), "git_commit": git_commit(),
            "fingerprints": currency.fingerprints(spec),  # what ran it (dlbench.currency): 0.37.0
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),  # where the run was a Slurm job, and on which node
            "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "slurm_partition": os.environ.get("SLURM_JOB_PARTITION"),
        },
    }


def quality(spec: RunSpec, result: dict, not_ok: str | None) -> dict:
    reasons = {"accuracy": "not measured (speed benchmark)"}
    if spec.task == "inference":
        reasons["final_loss"] = "an inference run computes no loss"
    elif result.get("final_loss") is None:
        reasons["final_loss"] = not_ok or "the framework reported no loss"
    block = {"final_loss": result.get("final_loss"), "accuracy": None}
    if spec.task == "accuracy":
        block.update(accuracy_block(spec, result.get("epochs") or [], not_ok))
        reasons = {key: why for key, why in reasons.items() if block[key] is None} | block.pop("reasons")
    return {**block, "reasons": reasons}


SERIES_SCHEMA = 1
SERIES_SUFFIX = ".series.json.gz"


def series_path(record_path: Path) -> Path:
    """Where a run's series lie: beside its record (``rep1.json`` -> ``rep1.series.json.gz``)."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + SERIES_SUFFIX)


def series(run: dict, spec: RunSpec, result: dict, sampler: Sampler | None) -> dict:
    """What a record reduces, kept whole so that another definition can be computed from it later: every sample of
    the monitor (host: the run's resident memory and CPU time, the held cores' busy time, RAPL counters; each GPU:
    power, device and process memory, energy counter, processes on it; a CPU run's are its node's idle GPUs, read
    once a second) and, for a profile run, every profiled step's time and
    each layer's forward and backward seconds in it (steps x layers, the first device's; then each device's), and the
    optimizer's update in it (the whole; and steps x layers where the profiler attributes it).
    ``run``: the record's run block, which names the run the series are of."""
    host_samples, gpu_samples = (sampler.host_samples, sampler.gpu_samples) if sampler else ([], [])
    kept = {"series_schema": SERIES_SCHEMA, "run": run,
            "host": {field: [getattr(sample, field) for sample in host_samples]
                     for field in ("time", "rss_mib", "own_cpu_s", "cores_busy_s", "energy_uj")},
            "gpus": [{field: [tick[gpu][field] for tick in gpu_samples]
                      for field in ("time", "power_w", "device_mib", "process_mib", "energy_j", "processes")}
                     for gpu in range(len(gpu_samples[0]) if gpu_samples else 0)],
            "gpus_idle": bool(sampler and sampler.probe.idle),  # a CPU run's: the node's GPUs, which it left idle
            "profile": None}
    if spec.task == "profile":
        found = result.get("profile") or {}
        steps = found.get("layers") or []
        names = list(steps[0]) if steps else []

        def phases(device_steps: list[dict]) -> dict:
            return {f"{phase}_seconds": [[step[name][index] for name in names] for step in device_steps]
                    for index, phase in enumerate(("forward", "backward"))}
        layer_updates = found.get("layer_update_seconds")
        kept["profile"] = {"method": found.get("method"), "layers": names,
                           "iteration_seconds": found.get("iteration_seconds") or [], **phases(steps),
                           "devices": [phases(device) for device in found.get("devices") or []],
                           # the first device's optimizer update: each step's whole, and its layers' where timed apart
                           "update_seconds": found.get("update_seconds"),
                           "layer_update_seconds": layer_updates and [[step[name] for name in names]
                                                                      for step in layer_updates]}
    return kept


def write_record(record: dict, path: Path) -> None:
    """Write atomically, so a killed job never leaves half a record behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_json(path, record, indent=1)


RECORD_SCHEMA = Path(__file__).resolve().parent.parent.parent / "schemas" / "run_record.schema.yaml"


@functools.cache
def record_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(yaml.safe_load(RECORD_SCHEMA.read_text()))


def record_schema_version() -> int:
    """The schema today's records have (the monitor writes them: dlbench.record.SCHEMA_VERSION)."""
    return record_validator().schema["properties"]["schema"]["const"]


ABSURD = 1e15  # beyond any measured quantity's magnitude (FLOPs per image ~1e10, bytes ~1e12, epoch seconds ~2e9)


def _not_a_number(token: str):
    raise ValueError(f"{token} is not a measurement")


def _measured_number(token: str, kind=float) -> float | int:
    """A number of a record's JSON text (``kind``: float or int, as the parser found it), refused where it cannot be
    a measurement: it overflows to infinity (1e999) or is larger than anything a run measures (1e300)."""
    number = kind(token)
    if not math.isfinite(number):
        raise ValueError(f"{token} is not a measurement (not finite)")
    if abs(number) > ABSURD:
        raise ValueError(f"{token} is not a measurement (beyond ±{ABSURD:.0e})")
    return number


def filed_run(path: Path) -> str | None:
    """The run a record's path names (framework/dataset/network/placement/variant/task/rep<k>, as the workflow files
    it under ``runs/``); None for a path outside that layout."""
    parts = Path(path).parts
    if len(parts) < 8 or parts[-8] != "runs" or not re.fullmatch(r"rep[1-9][0-9]*\.json", parts[-1]):
        return None
    return "/".join([*parts[-7:-1], parts[-1].removesuffix(".json")])


def recorded_run(record: dict) -> str:
    """The run a record says it is, named as :func:`filed_run` names a path's."""
    run = record["run"]
    placement = placement_label(run.get("hardware"), run["device"])
    return "/".join([run["framework"], run["dataset"], run["network"], placement, run_variant(run), run["task"],
                     f"rep{run['repetition']}"])


def read_record(path: Path) -> dict:
    """A run's record in today's form (:func:`upgrade`), checked against the record's schema: its numbers
    finite, in range. :class:`files.Unreadable` naming the file where it is damaged, incomplete or of a
    schema newer than this code's."""
    try:
        record = json.loads(Path(path).read_text(), parse_constant=_not_a_number, parse_float=_measured_number,
                            parse_int=functools.partial(_measured_number, kind=int))
    except (OSError, ValueError) as error:
        raise files.Unreadable(f"{path}: {type(error).__name__}: {error}") from None
    schema, newest = record.get("schema") if isinstance(record, dict) else None, record_schema_version()
    if type(schema) is not int or not 1 <= schema <= newest:  # True is an int to isinstance
        raise files.Unreadable(f"{path}: record schema {schema!r} is not one this dlbench reads (1 to {newest}); "
                               "a newer dlbench wrote it?")
    try:
        record = upgrade(record)
    except (KeyError, TypeError, AttributeError) as error:
        raise files.Unreadable(f"{path}: not a schema-{schema} record ({type(error).__name__}: {error})") from None
    problem = best_match(record_validator().iter_errors(record))
    if problem:
        where = "/".join(map(str, problem.absolute_path)) or "the record"
        raise files.Unreadable(f"{path}: {where}: {problem.message}")
    filed = filed_run(path)
    if filed and filed != (run := recorded_run(record)):
        raise files.Unreadable(f"{path}: its run is {run}, not the {filed} its path names")
    return record


def load_records(paths, log=print) -> list[dict]:
    """The readable records of ``paths``; each left out is named, with why, through ``log``."""
    records = []
    for path in paths:
        try:
            record = read_record(path)
        except files.Unreadable as error:
            log(f"left out: {error}")
            continue
        record["path"] = str(path)
        records.append(record)
    return records


def upgrade(record: dict) -> dict:
    """A record of an older schema in today's form, so that records kept from an earlier version
    aggregate beside new ones (CHANGELOG.md says what each schema changed)."""
    if record["schema"] == 1:  # its reasons began with "unavailable: "; today the status is only data
        def words(reason: str) -> str:
            return reason.removeprefix("unavailable: ")
        record["reason"] = words(record["reason"])
        for section in ("timing", "memory", "power", "quality"):
            reasons = record[section].get("reasons", {})
            reasons.update({field: words(reason) for field, reason in reasons.items()})
        record["run"]["compile"] = False  # the precision axis and the compile axis came with schema 2
        record["execution"] = None  # unknown: each framework used its own default math
        record["schema"] = 2
    if record["schema"] == 2:  # schema 3 timed the set-up before the first step
        record["timing"].update(dict.fromkeys(SETUP_FIELDS))
        record["timing"].setdefault("reasons", {}).update(
            dict.fromkeys(SETUP_FIELDS, "not measured before record schema 3"))
        record["schema"] = 3
    if record["schema"] == 3:  # schema 4 counted FLOPs: the achieved rate follows from the measured speed
        spec = RunSpec(**{key: value for key, value in record["run"].items() if key in RunSpec.__dataclass_fields__})
        ok = record["status"] == "ok"
        record["compute"] = compute.block(spec, record["timing"]["images_per_second_mean"] if ok else None, None,
                                          "", [], None if ok else f"see the run's reason ({record['status']})",
                                          Peak(None, "no peak was looked up before record schema 6"),
                                          no_ceiling="no ceiling was measured before record schema 4")
        before = "not measured before record schema 4"
        for section, fields in (("timing", ("input_wait_seconds", "input_wait_share", "contention_share")),
                                ("power", ("cpu_energy_per_image_j",))):
            record[section].update(dict.fromkeys(fields))
            record[section].setdefault("reasons", {}).update(dict.fromkeys(fields, before))
        record["schema"] = 4
    if record["schema"] == 4:  # schema 5 added inference runs; every run before was a training run
        record["run"]["task"] = "train"
        record["latency"] = None
        record["schema"] = 5
    # schema 6: what was MFU, over the measured ceiling, is ceiling_fraction (a block made above is today's)
    if record["schema"] == 5 and "ceiling_fraction" not in record["compute"]:
        block = record["compute"]
        block["ceiling_fraction"] = block.pop("mfu")
        reasons = block["reasons"]
        if "mfu" in reasons:
            reasons["ceiling_fraction"] = reasons.pop("mfu")
        block.update(peak_tflops=None, mfu=None, ceiling_flag=None)
        reasons.update(dict.fromkeys(("peak_tflops", "mfu"), "no peak was looked up before record schema 6"))
    record["schema"] = 6
    return record
