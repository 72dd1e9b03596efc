"""A run's record built by the monitor from the runner's result, the monitor's samples and the node; and the series
of samples and profiled steps the record reduces."""
from __future__ import annotations

import os
import platform
import socket
import statistics
from typing import TYPE_CHECKING

import psutil

from .. import backends
from ..hardware import host, peaks
from ..hardware.gpu import GpuProbe, memory_and_power
from ..spec import SETUP_FIELDS, RunSpec
from ..tasks import TASKS, load
from . import compute, currency
from .io import SCHEMA_VERSION
from .provenance import cpu_model, dlbench_version, git_commit

if TYPE_CHECKING:
    from ..hardware.sampler import Sampler


def setup_times(result: dict, times: list[float], warmup: list[float]) -> dict:
    """Where an ok run's time before its timed window went: the runner's start (interpreter, dlbench),
    the framework's import, the build of model and input pipeline (their sum: ``setup_seconds``),
    then the first step (compilation, autotuning) and the whole warm-up."""
    if not times:
        return dict.fromkeys(SETUP_FIELDS)
    start = result["entered_epoch"] - result["launched_epoch"]
    return {"start_seconds": start, "import_seconds": result["import_seconds"],
            "build_seconds": result["build_seconds"],
            "setup_seconds": start + result["import_seconds"] + result["build_seconds"],
            "first_step_seconds": times[0], "warmup_seconds": sum(warmup)}


def build_record(spec: RunSpec, result: dict, sampler: Sampler | None, probe: GpuProbe, config_sha256: str,
                 ceiling: dict | None, wall_seconds: float, held: dict, environment: dict | None = None) -> dict:
    """The run's record from the runner's ``result`` and the monitor's samples: ``wall_seconds``, the run's whole time
    (its wait for devices, start, set-up and steps); ``held``, when it started and finished and what it held when
    (the provenance's started_at, finished_at, cores_held, held_from, held_until); ``environment``, the one it ran in
    (:func:`dlbench.record.provenance.environment`)."""
    ok = result["status"] == "ok"
    not_ok = None if ok else f"see the run's reason ({result['status']})"  # not repeated in every metric
    times = result.get("iteration_seconds") or []
    window = result.get("timed_window") or {}
    warmup, timed = spec.split_warmup(times)
    images = spec.batch_size_global * len(timed)
    timing = {
        "iteration_seconds": times,
        "images_per_second_mean": images / window["seconds"] if ok else None,
        "images_per_second_median": spec.batch_size_global / statistics.median(timed) if ok else None,
        "timed_seconds": window.get("seconds"),
        "wall_seconds": wall_seconds,
        "cpu_per_wall": window["cpu_seconds"] / window["seconds"] if ok else None,
        "step_completion": result.get("step_completion"),
        **setup_times(result, times if ok else [], warmup),
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
                                         probe.idle_error, probe.failures)
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
        timing["reasons"] = {k: not_ok for k, v in timing.items() if v is None}
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
        **task_blocks(spec, result, not_ok),
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
            "fingerprints": currency.fingerprints(spec),  # what ran it (dlbench.record.currency): 0.37.0
            "data_sha256": currency.data_identity(spec),  # what it read: 0.52.0
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),  # where the run was a Slurm job, and on which node
            "slurm_node": os.environ.get("SLURMD_NODENAME"),
            "slurm_partition": os.environ.get("SLURM_JOB_PARTITION"),
            "environment": environment,
            **held,
        },
    }


def task_blocks(spec: RunSpec, result: dict, not_ok: str | None) -> dict:
    """The tasks' own blocks of a run's record (their ``record_blocks``: dlbench.tasks.TASKS), null but the run's
    task's; and the quality block every record has (its final loss), with an accuracy run's accuracy."""
    blocks = {block: None for task in TASKS.values() for block in task.record_blocks}
    blocks["quality"] = quality(spec, result, not_ok)
    if TASKS[spec.task].record_blocks:
        blocks.update(load(spec.task).record_blocks(spec, result, not_ok, blocks))
    return blocks


def quality(spec: RunSpec, result: dict, not_ok: str | None) -> dict:
    reasons = {"accuracy": "not measured (speed benchmark)"}
    if spec.task == "inference":
        reasons["final_loss"] = "an inference run computes no loss"
    elif result.get("final_loss") is None:
        reasons["final_loss"] = not_ok or "the framework reported no loss"
    return {"final_loss": result.get("final_loss"), "accuracy": None, "reasons": reasons}


SERIES_SCHEMA = 1


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
