"""The train task: training steps on the run's input pipeline, timed (its record: the timing, memory, power
and compute blocks every run has); with ``keras_fit``, the steps of Keras's own ``model.fit`` loop, timed by
its per-step callback."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .loop import StepClock, timed_loop

if TYPE_CHECKING:
    from ..spec import RunSpec


def run(harness, spec: RunSpec, progress=print) -> dict:
    if spec.keras_fit:
        clock = StepClock(harness, spec.iterations, spec.warmup_iterations, progress)
        harness.fit(clock)
        timed = clock.result()
    else:
        timed = timed_loop(harness, spec.iterations, spec.warmup_iterations, progress)
    return {**timed, "final_loss": harness.final_loss()}
