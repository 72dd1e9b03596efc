"""One node's measured ceiling (runs' ``ceiling_fraction``): the best dense-product rate of one of its devices in
one precision.

Measured, not read from a datasheet: :mod:`dlbench.run.matmul_peak` runs in the PyTorch environment on a
GPU (or the cores of a CPU run) that the job holds like a training run (:mod:`dlbench.hardware.slots`), so
that it shares the device with nothing. The workflow runs it once per node and precision
(``rules/train.smk``, whose params key it by the node's identity: :func:`dlbench.hardware.node.identity`). It never
fails: a ceiling that cannot be measured is ``tflops: null`` with the reason, and the runs' ``ceiling_fraction``
says it.
"""
from __future__ import annotations

import socket
import subprocess
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from .. import files, lifeline
from ..hardware.gpu import GpuProbe
from ..hardware.slots import SlotError
from ..record.provenance import cpu_model, dlbench_version
from .monitor import DevicesMissing, StartFailed, exit_words, held_devices, runner_environment, started


def unmeasured(processor: str, precision: str, reason: str) -> dict:
    """The ceiling's record before (or instead of) its measurement: where, what, and why not."""
    return {"processor": processor, "precision": precision,
            "node": {"host": socket.gethostname(), "cpu_model": cpu_model(), "gpu": None}, "tflops": None,
            "reason": reason, "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "dlbench_version": dlbench_version()}


def measure(processor: str, precision: str, python: str, threads: int, log, lock_dir: Path,
            wait_s: float | None, nvml=None, timeout_s: float = 300) -> dict:
    """The ceiling of one device (one GPU, or ``threads`` cores) in ``precision``: its best TFLOP/s."""
    found = unmeasured(processor, precision, "")
    node = found["node"]
    command = [python, "-m", "dlbench.run.matmul_peak", precision, processor]
    try:
        with (held_devices(processor, int(processor == "gpu"), threads, lock_dir, wait_s, nvml, log)
              as (gpus, cores, locks),
              tempfile.TemporaryDirectory(prefix=".dlbench-ceiling-", dir=Path(log.name).parent) as scratch,
              lifeline.held(Path(scratch), log) as lifeline_environment):
            if gpus:
                probe = GpuProbe(gpus, nvml)
                node["gpu"] = probe.describe()[0] if probe.handles else None
                probe.close()
            result = Path(scratch, "result.json")
            environment = {**runner_environment(threads, gpus, precision=precision), **lifeline_environment}
            log.write(f"{' '.join(command)} on GPUs {gpus or 'none'}, cores {cores}\n")
            log.flush()
            with started([*command, str(result)], log, cores, locks, environment) as process:
                code = process.wait(timeout=timeout_s)
            if not result.exists():
                return {**found, "reason": f"the matrix product {exit_words(code)}, with no result; see its log"}
            return {**found, **files.read_json(result)}
    except files.Unreadable as error:
        return {**found, "reason": f"the matrix product's result is unreadable: {error}"}
    except subprocess.TimeoutExpired:
        return {**found, "reason": f"the matrix product took longer than {timeout_s:.0f} s"}
    except (DevicesMissing, SlotError, StartFailed) as error:
        return {**found, "reason": str(error)}


def write(ceiling: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_json(path, ceiling, indent=1)
