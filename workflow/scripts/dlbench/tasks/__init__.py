"""The tasks a run can do, one module each (``dlbench.tasks.<name>``): its ``run(harness, spec, progress)``,
which the runner calls with the framework's harness and whose dict goes into the runner's result, and, where the
task has record blocks of its own, ``record_blocks(spec, result, not_ok, record)``: those blocks as the monitor
builds them from that result. :data:`TASKS` is the one place a task is added: its words, the harness methods it
calls beyond a training step (the contract check holds every backend that runs it to them:
:func:`dlbench.backends.check_harness`), for a task that runs on one device only why, the record blocks its module
fills, and the tables and figures the workflow makes of its runs.

Standard library only: the runner imports it inside framework environments, and the registry and the
config import it everywhere.
"""
from __future__ import annotations

import importlib
import os
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class Task:
    words: str  # what the task measures (the config schema's and docs/measurement.md's words)
    harness_methods: tuple[str, ...]  # what it calls of a harness beyond backends.Harness, every run's
    single_device: str | None = None  # why it runs on one device only (SINGLE_DEVICES), if it does
    record_blocks: tuple[str, ...] = ()  # the record's blocks its module's record_blocks() fills for its runs
    # What the workflow makes of its runs, where the config has them: results/ paths, a cell's with {dataset},
    # {network} and {ext} (each figure format)
    targets: tuple[str, ...] = ()


# backends.TrainingHarness's steps, which every training task times
TRAINING = ("step", "final_loss")
TASKS = {
    "train": Task("training steps (forward, backward, optimizer update) on the run's input pipeline", TRAINING,
                  targets=("results/figures/{dataset}/{network}/iteration_times.{ext}",)),
    "inference": Task("forward passes in evaluation mode without gradients on a resident batch of the run's data: "
                      "throughput at the case's batch size, latency of single images",
                      ("inference", "INFERENCE_IDIOM"), "splitting a batch over several is a training technique",
                      record_blocks=("latency",)),
    "accuracy": Task("training over whole epochs of the training set in the framework's input pipeline, then "
                     "top-1 accuracy and loss on the test set after every epoch; time to a target accuracy",
                     (*TRAINING, "test_logits"), record_blocks=("quality",),
                     targets=("results/tables/accuracy.csv",
                              "results/figures/{dataset}/{network}/accuracy_curve.{ext}")),
    "profile": Task("training steps timed as for train, then as many again under the framework's own profiler: "
                    "each layer's forward and backward time, the profiler's overhead, the share no layer accounts "
                    "for; over several devices, each device's layers and the all-reduce's share where the "
                    "framework's profiler times them apart", (*TRAINING, "layer_profiler"), record_blocks=("profile",),
                    targets=("results/tables/layers.csv", "results/figures/{dataset}/{network}/layers.{ext}",
                             "results/figures/{dataset}/{network}/layer_steps.{ext}",
                             "results/figures/{dataset}/{network}/layer_phases.{ext}")),
}
# The devices of the tasks that run on one: on any other such a run is recorded unavailable with the reason.
SINGLE_DEVICES = ("cpu", "gpu1")
SINGLE_DEVICE_TASKS = {name: task.single_device for name, task in TASKS.items() if task.single_device}


def first_process() -> bool:
    """One process of a data-parallel group (rank 0: torchrun sets RANK, srun SLURM_PROCID) speaks for the run:
    it prints the progress, evaluates an accuracy run's epochs and writes the result. Each step ends with the
    gradients of all."""
    return os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0")) == "0"


def load(name: str) -> ModuleType:
    """The task's module (imported here, not above: the inference and accuracy modules are the runner's)."""
    if name not in TASKS:
        raise KeyError(f"unknown task {name!r}; known: {', '.join(TASKS)}")
    return importlib.import_module(f"{__name__}.{name}")
