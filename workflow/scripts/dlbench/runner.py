"""The child process of a run: build the network, train, time every iteration.

Started by :mod:`dlbench.monitor` with the framework environment's interpreter::

    python -m dlbench.runner SPEC.json RESULT.json

It imports only the standard library and its framework. The result file carries what only
the training process can know: per-iteration times (device synchronised before each clock
read), the timed window in wall-clock time (so the monitor can cut its GPU samples to it),
the process CPU time over that window, the final loss and the framework's own memory peak.
"""
from __future__ import annotations

import json
import platform
import sys
import time
import traceback
from pathlib import Path

from . import backends
from .datasets import FAMILIES
from .networks import network as describe_network
from .spec import RunSpec


def timed_loop(trainer, iterations: int, warmup: int, progress=print) -> dict:
    """Run ``iterations`` steps; every interval runs from one synchronised clock read to the next."""
    times: list[float] = []
    window: dict = {}
    trainer.synchronize()
    last = time.perf_counter()
    report_every = max(1, iterations // 10)
    for index in range(iterations):
        if index == warmup:
            window = {"start_epoch": time.time(), "cpu_start": time.process_time()}
        trainer.step()
        trainer.synchronize()
        now = time.perf_counter()
        times.append(now - last)
        last = now
        if (index + 1) % report_every == 0 or index + 1 == iterations:
            phase = "warm-up" if index < warmup else "timed"
            progress(f"iteration {index + 1}/{iterations} ({phase}): {times[-1] * 1e3:.1f} ms", flush=True)
    timed_seconds = sum(times[warmup:])
    return {
        "iteration_seconds": times,
        "timed_window": {
            "start_epoch": window["start_epoch"],
            "end_epoch": time.time(),
            "cpu_seconds": time.process_time() - window["cpu_start"],
            "seconds": timed_seconds,
        },
    }


def run(spec: RunSpec) -> dict:
    backend = backends.load(spec.framework)
    result = {"framework_version": backend.framework_version(),
              "python": platform.python_version(), "packages": backends.package_versions(backend.PACKAGES)}
    trainer = backend.trainer(spec, describe_network(spec.network, FAMILIES[spec.family].variant))
    print(f"{spec.framework} {result['framework_version']}: {spec.network} on {spec.dataset}, "
          f"{spec.device}, batch {spec.batch_size_global}, {spec.iterations} iterations "
          f"({spec.warmup_iterations} warm-up), {spec.threads} threads", flush=True)
    result.update(timed_loop(trainer, spec.iterations, spec.warmup_iterations))
    result["final_loss"] = trainer.final_loss()
    result["framework_allocator_peak_mib"] = trainer.allocator_peak_mib()
    return result


def _error_name(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def main(argv: list[str]) -> int:
    spec_path, result_path = map(Path, argv)
    spec = RunSpec.load(spec_path)
    try:
        result = {"status": "ok", "reason": "", **run(spec)}
        code = 0
    except backends.Unavailable as error:
        result, code = {"status": "unavailable", "reason": f"unavailable: {error}"}, 0
    except Exception as error:  # noqa: BLE001 - any failure becomes the record's reason
        traceback.print_exc()
        result, code = {"status": "failed", "reason": f"{_error_name(error)}: {error}"}, 1
    result_path.write_text(json.dumps(result))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
