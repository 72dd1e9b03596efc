"""The child process of a run: build the network, train, time every iteration.

Started by :mod:`dlbench.monitor` with the framework environment's interpreter::

    python -m dlbench.runner SPEC.json RESULT.json

It imports only the standard library and its framework. The result file carries what only
the training process can know: per-iteration times (each read as a step finishes, an asynchronous
step's successor already dispatched), the timed window in wall-clock time (so the monitor can cut
its GPU samples to it), the process CPU time over that window, the final loss, the framework's
own memory peak, and how long the set-up before the first step took (import, build).
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

from . import backends, lifeline
from .datasets import FAMILIES
from .networks import network as describe_network
from .spec import RunSpec


def _cpu_seconds(trainer) -> float:
    """CPU time of this process, and of the worker process where the framework trains in one (CNTK)."""
    worker = getattr(trainer, "worker_cpu_seconds", None)
    return time.process_time() + (worker() if worker else 0.0)


def timed_loop(trainer, iterations: int, warmup: int, progress=print) -> dict:
    """Run ``iterations`` steps with one step in flight, as a real training loop runs.

    An asynchronous step (CUDA, MXNet's engine) is dispatched before the loop waits for the one
    before it, so the device never idles while Python dispatches; a step that had finished when
    ``step()`` returned is clocked at once. An interval runs from one step's completion to the
    next, the intervals sum to the wall time of all steps, and the timed window opens with the
    warm-up finished and nothing in flight.
    """
    times: list[float] = []
    window: dict = {}
    report_every = max(1, iterations // 10)

    def open_window() -> None:
        window.update(start_epoch=time.time(), cpu_start=_cpu_seconds(trainer),
                      input_wait_start=trainer.input_wait_seconds())

    def step_finished() -> None:
        nonlocal last
        now = time.perf_counter()
        times.append(now - last)
        last = now
        if len(times) == warmup:
            open_window()
        done = len(times)
        if done % report_every == 0 or done == iterations:
            phase = "warm-up" if done <= warmup else "timed"
            progress(f"iteration {done}/{iterations} ({phase}): {times[-1] * 1e3:.1f} ms", flush=True)

    trainer.synchronize()
    if warmup == 0:
        open_window()
    last = time.perf_counter()
    in_flight = None  # how to wait for the step dispatched last, until it is clocked
    for index in range(iterations):
        if index == warmup and in_flight:
            in_flight()
            step_finished()
            in_flight = None
        wait_for_step = trainer.step()
        if wait_for_step is backends.already_finished:
            step_finished()
            continue
        if in_flight:
            in_flight()
            step_finished()
        in_flight = wait_for_step
    trainer.synchronize()
    if in_flight:
        step_finished()
    input_wait = trainer.input_wait_seconds()
    return {
        "iteration_seconds": times,
        "timed_window": {
            "start_epoch": window["start_epoch"],
            "end_epoch": time.time(),
            "cpu_seconds": _cpu_seconds(trainer) - window["cpu_start"],
            "seconds": sum(times[warmup:]),
            "input_wait_seconds": None if input_wait is None else input_wait - window["input_wait_start"],
        },
    }


def _first_process() -> bool:
    """One process of a data-parallel group (rank 0; torchrun sets RANK) speaks for the run: it
    prints the progress and writes the result. Each step ends with the gradients of all."""
    return os.environ.get("RANK", "0") == "0"


def _quiet(*args, **kwargs) -> None:
    pass


def run(spec: RunSpec) -> dict:
    backends.require_numerics(spec)
    started = time.perf_counter()
    backend = backends.load(spec.framework)
    result = backends.describe(backend)
    imported = time.perf_counter()
    backends.require_cuda_build(spec, result)
    trainer = backend.Trainer(spec, describe_network(spec.network, FAMILIES[spec.family].variant))
    result.update(import_seconds=imported - started, build_seconds=time.perf_counter() - imported)
    progress = print if _first_process() else _quiet
    progress(f"{spec.framework} {result['framework_version']}: {spec.network} on {spec.dataset}, "
             f"{spec.device}, {spec.variant}, batch {spec.batch_size_global}, {spec.iterations} iterations "
             f"({spec.warmup_iterations} warm-up), {spec.threads} threads", flush=True)
    result.update(timed_loop(trainer, spec.iterations, spec.warmup_iterations, progress))
    result["final_loss"] = trainer.final_loss()
    result["framework_allocator_peak_mib"] = trainer.allocator_peak_mib()
    return result


def _error_name(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def main(argv: list[str]) -> int:
    entered_epoch = time.time()  # the monitor's clock from its launch to here: the interpreter's start
    lifeline.watch()  # before anything slow: a monitor killed meanwhile ends this run at once
    spec_path, result_path = map(Path, argv)
    spec = RunSpec.load(spec_path)
    try:
        result = {"status": "ok", "reason": "", "entered_epoch": entered_epoch, **run(spec)}
        code = 0
    except backends.Unavailable as error:
        result, code = {"status": "unavailable", "reason": str(error)}, 0
    except Exception as error:  # noqa: BLE001 - any failure becomes the record's reason
        traceback.print_exc()
        result, code = {"status": "failed", "reason": f"{_error_name(error)}: {error}"}, 1
    if _first_process():
        result_path.write_text(json.dumps(result))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
