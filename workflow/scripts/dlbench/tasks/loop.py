"""The timed loop every task runs its steps in (standard library only: the runner's)."""
from __future__ import annotations

import time

from . import window_marks


def already_finished() -> None:
    """What ``step()`` returns when the step ran eagerly and had finished by the time it returned."""


class Stamped:
    """What ``step()`` returns where the framework's engine stamps the step's completion as it runs (MXNet's): the
    timed loop need not wait for each such step to time it, so it waits only at its progress lines, as a training
    loop that reads its loss every so many steps, and Python dispatches the steps between them in one burst."""

    COMPLETION: str  # for the record: what stamps a step's completion

    def __call__(self) -> float:
        """Block until the step has finished; the time it finished, on ``time.perf_counter``'s clock."""
        raise NotImplementedError


def _cpu_seconds(harness) -> float:
    """CPU time of this process, and of the worker process where the framework trains in one (CNTK)."""
    worker = getattr(harness, "worker_cpu_seconds", None)
    return time.process_time() + (worker() if worker else 0.0)


class StepClock:
    """Each step's interval, from the completion of the one before it; the timed window opens once the warm-up
    steps have finished. The timed loop's, and a framework's own loop's (Keras's ``model.fit``) through its
    per-step callback."""

    def __init__(self, harness, iterations: int, warmup: int, progress=print):
        self.harness, self.iterations, self.warmup, self.progress = harness, iterations, warmup, progress
        self.times: list[float] = []
        self.window: dict = {}
        self.report_every = max(1, iterations // 10)
        self.last = None
        self.completion = None  # for the record: how a step's completion is known (set by the loop that runs them)

    def _open_window(self) -> None:
        self.window.update(start_epoch=time.time(), cpu_start=_cpu_seconds(self.harness),
                           input_wait_start=self.harness.input_wait_seconds())
        window_marks.mark(window_marks.OPEN)

    def start(self) -> None:
        """Nothing in flight: the first step's interval starts now."""
        if self.warmup == 0:
            self._open_window()
        self.last = time.perf_counter()

    def step_finished(self, at: float | None = None) -> None:
        """A step has finished: now, or ``at`` (``time.perf_counter``'s clock: a :class:`Stamped` step's stamp)."""
        now = time.perf_counter() if at is None else at
        self.times.append(now - self.last)
        self.last = now
        done = len(self.times)
        if done == self.warmup:
            self._open_window()
        if done % self.report_every == 0 or done == self.iterations:
            phase = "warm-up" if done <= self.warmup else "timed"
            self.progress(f"iteration {done}/{self.iterations} ({phase}): {self.times[-1] * 1e3:.1f} ms", flush=True)

    def result(self) -> dict:
        input_wait, end_epoch = self.harness.input_wait_seconds(), time.time()
        window_marks.mark(window_marks.CLOSE)
        return {
            "iteration_seconds": self.times,
            "step_completion": self.completion,
            "timed_window": {
                "start_epoch": self.window["start_epoch"],
                "end_epoch": end_epoch,
                "cpu_seconds": _cpu_seconds(self.harness) - self.window["cpu_start"],
                "seconds": sum(self.times[self.warmup:]),
                "input_wait_seconds": None if input_wait is None else input_wait - self.window["input_wait_start"],
            },
        }


def timed_loop(harness, iterations: int, warmup: int, progress=print, step=None) -> dict:
    """Run ``iterations`` steps (the harness's, or ``step``: an inference run's forward passes) with one
    step in flight, as a real training loop runs.

    An asynchronous step (CUDA, MXNet's engine) is dispatched before the loop waits for the one
    before it, so the device never idles while Python dispatches; a step that had finished when
    ``step()`` returned is clocked at once. A step its engine stamps (:class:`Stamped`) is
    waited for only at the progress lines: the loop dispatches the steps up to the next line while
    the engine runs those up to this one. An interval runs from one step's completion to the next,
    the intervals sum to the wall time of all steps, and the timed window opens with the warm-up
    finished and nothing in flight.
    """
    clock = StepClock(harness, iterations, warmup, progress)
    step = step or harness.step
    harness.synchronize()
    clock.start()
    in_flight = []  # the steps dispatched and not yet clocked, oldest first: how to wait for each
    for index in range(iterations):
        if index == warmup:
            _clock(clock, in_flight)
        wait_for_step = step()
        clock.completion = clock.completion or _completion(wait_for_step)
        if wait_for_step is already_finished:
            clock.step_finished()
            continue
        in_flight.append(wait_for_step)
        unclocked = clock.report_every if isinstance(wait_for_step, Stamped) else 1
        if len(in_flight) == 2 * unclocked:
            _clock(clock, in_flight, unclocked)
    harness.synchronize()
    _clock(clock, in_flight, synchronized=True)
    return clock.result()


def _completion(wait_for_step) -> str:
    if wait_for_step is already_finished:
        return "the step's return: it had finished by then"
    if isinstance(wait_for_step, Stamped):
        return wait_for_step.COMPLETION
    return "the loop's wait for the step, the next one dispatched before it (one step in flight)"


def _clock(clock: StepClock, in_flight: list, count: int | None = None, synchronized: bool = False) -> None:
    """Clock the oldest ``count`` steps in flight (all of them by default) and drop them. Stamped steps: the newest
    is waited for first (an engine runs the steps in order, so the loop wakes once for the lot), then each gives its
    stamp. Others: each is waited for and clocked now, unless the harness has synchronized (every step has finished,
    and a wait may read a reply that synchronize() took: CNTK's worker's)."""
    steps = in_flight[:count]
    del in_flight[:count]
    if steps and isinstance(steps[-1], Stamped):
        steps[-1]()
        for stamp in steps:
            clock.step_finished(stamp())
        return
    for wait_for_step in steps:
        if not synchronized:
            wait_for_step()
        clock.step_finished()


def prefixed(progress, prefix: str, line: str, **kwargs) -> None:
    """``progress`` with ``prefix`` before each line (an accuracy run's epoch, a profile run's second loop)."""
    progress(prefix + line, **kwargs)
