"""The timed loop every task runs its steps in (standard library only: the runner's)."""
from __future__ import annotations

import time

from .. import backends


def _cpu_seconds(harness) -> float:
    """CPU time of this process, and of the worker process where the framework trains in one (CNTK)."""
    worker = getattr(harness, "worker_cpu_seconds", None)
    return time.process_time() + (worker() if worker else 0.0)


def timed_loop(harness, iterations: int, warmup: int, progress=print, step=None) -> dict:
    """Run ``iterations`` steps (the harness's, or ``step``: an inference run's forward passes) with one
    step in flight, as a real training loop runs.

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
        window.update(start_epoch=time.time(), cpu_start=_cpu_seconds(harness),
                      input_wait_start=harness.input_wait_seconds())

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

    step = step or harness.step
    harness.synchronize()
    if warmup == 0:
        open_window()
    last = time.perf_counter()
    in_flight = None  # how to wait for the step dispatched last, until it is clocked
    for index in range(iterations):
        if index == warmup and in_flight:
            in_flight()
            step_finished()
            in_flight = None
        wait_for_step = step()
        if wait_for_step is backends.already_finished:
            step_finished()
            continue
        if in_flight:
            in_flight()
            step_finished()
        in_flight = wait_for_step
    harness.synchronize()
    if in_flight:
        step_finished()
    input_wait = harness.input_wait_seconds()
    return {
        "iteration_seconds": times,
        "timed_window": {
            "start_epoch": window["start_epoch"],
            "end_epoch": time.time(),
            "cpu_seconds": _cpu_seconds(harness) - window["cpu_start"],
            "seconds": sum(times[warmup:]),
            "input_wait_seconds": None if input_wait is None else input_wait - window["input_wait_start"],
        },
    }


def prefixed(progress, prefix: str, line: str, **kwargs) -> None:
    """``progress`` with ``prefix`` before each line (an accuracy run's epoch, a profile run's second loop)."""
    progress(prefix + line, **kwargs)
