"""Keras 2 as seed 001 ran it (frameworks ``keras2-tensorflow``: Keras 2.2.4 on the thesis's TensorFlow 1.9.0;
``keras2-mxnet``: AWS's keras-mxnet 2.2.4.3 on the thesis's MXNet 1.2.0), in a worker under CPython 3.6
(workflow/scripts/workers/keras2_worker.py) in its backend's environment, driven as :mod:`dlbench.backends.worker`
drives every worker. Which of the two a run is: ``KERAS_BACKEND``, which :func:`dlbench.backends.load` sets from its
name, as for Keras 3.

The network goes to the worker as the description's layers; its input is its backend's worker's (the same format
and reader), handed to Keras as NumPy batches (``train_on_batch``), or, with ``keras_fit``, seed 001's ``model.fit``
over NumPy arrays, each step stamped by Keras's callback in the worker as it ends.
"""
from __future__ import annotations

import importlib
import os
from pathlib import Path
from types import ModuleType

from .. import networks
from ..registry import REGISTRY
from ..spec import RunSpec
from . import GpuCode, inputs, tensorflow_worker, whole_update, worker

WORKER = worker.WORKERS / REGISTRY["keras2-tensorflow"].worker


def _framework() -> str:
    return "keras2-" + os.environ["KERAS_BACKEND"]


def _native(framework: str) -> ModuleType:
    """The runner's module of the framework this Keras runs on: its worker's config and GPU library are Keras's."""
    return importlib.import_module(f"{__package__}.{REGISTRY[REGISTRY[framework].runs_on].module}")


def describe() -> dict:
    """The worker interpreter's Python, Keras's version, its backend's and numpy's, and the backend's CUDA build."""
    framework = _framework()
    return worker.describe(worker.worker_python(REGISTRY[framework].environment), WORKER, framework)


def gpu_code() -> GpuCode | str:
    """The GPU code in the backend's library in the worker environment, and the run's GPUs."""
    framework = _framework()
    environment = REGISTRY[framework].environment
    return worker.library_gpu_code(environment, WORKER, framework, _native(framework).GPU_LIBRARY)


class LayerProfiler(tensorflow_worker.LayerProfiler):
    """Keras 2 on TensorFlow 1.9 (``keras2-tensorflow``), traced as the TF 1.9 worker traces its steps; Keras 2 puts
    no layer's name in its optimizer's ops, so the update is timed whole."""

    METHOD = ("TF 1's tracer under Keras 2 (its train function's session.run with RunOptions FULL_TRACE, the "
              "RunMetadata's step stats, as the TF 1.9 worker's): each op's time by Keras's name scope: <layer>/ "
              "forward (its padding's too), training/<optimizer>/gradients/<layer>/ backward; the optimizer's other "
              "ops under training/<optimizer>/ the update of every weight, timed whole")

    def updates(self, traced: list[dict]) -> None:
        self.layer_updates = None
        self.update, self.update_untimed = whole_update(
            [step["update"] for step in traced], "the trace holds no op of the optimizer (training/<optimizer>/...)")


class Harness(worker.WorkerHarness):
    INFERENCE_IDIOM = ("model.predict_on_batch(images) on a resident NumPy batch, in the Keras 2 worker (each call "
                       "includes the runner's socket round trip)")
    SCRIPT = WORKER

    def __init__(self, spec: RunSpec, description: networks.Network):
        self.FRAMEWORK, self.keras_fit = f"Keras 2 ({spec.framework})", spec.keras_fit
        self.layer_names = networks.layer_names(description)
        super().__init__(spec, description)

    def layer_profiler(self) -> LayerProfiler:
        return LayerProfiler(self, self.layer_names)

    def worker_config(self, spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
        return {**_native(spec.framework).worker_config(spec, description, scratch),
                "input_shape": list(description.input_shape), "threads": spec.threads, "iterations": spec.iterations,
                "keras_fit": spec.keras_fit, "fit_arrays_bytes": inputs.FIT_ARRAYS_GIB * 2**30}

    def fit(self, clock) -> None:
        """Seed 001's training: ``model.fit`` in the worker, over the NumPy arrays it loaded as it started (synthetic
        data's batch repeated, or the training split); ``clock`` takes each step's end as the worker's callback
        stamped it (the same monotonic clock) when its line arrives, so the timed window opens as the warm-up ends."""
        clock.completion = ("Keras 2's callback at each step's end in model.fit's loop (its loss on the host), "
                            "stamped in the worker")
        clock.start()
        self._send(f"fit {clock.iterations}")
        while "step_end" in (reply := self._replies()[0]):
            clock.step_finished(at=reply["step_end"])

    def input_wait_seconds(self) -> float | None:
        return None if self.keras_fit else self.input_wait  # model.fit's input: inside its steps
