"""The train task: training steps on the run's input pipeline, timed (its record: the timing, memory, power
and compute blocks every run has)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from .loop import timed_loop

if TYPE_CHECKING:
    from ..spec import RunSpec


def run(harness, spec: RunSpec, progress=print) -> dict:
    return {**timed_loop(harness, spec.iterations, spec.warmup_iterations, progress),
            "final_loss": harness.final_loss()}
