"""The thesis's TensorFlow (1.9.0): a graph and a session under the CPython 3.6 it ran on, in a worker process
(workflow/scripts/workers/tensorflow_worker.py, driven as :mod:`dlbench.backends.worker` drives every worker). The
network goes to the worker as the description's layers (:class:`worker.DescriptionPlanner`); the worker builds them
with ``tf.layers`` and reads the TFRecord shards as today's TensorFlow backend does. One step is one
``session.run`` of the update, which returns when the step has finished.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from .. import networks
from ..formats import TFRECORD_FILE
from ..registry import REGISTRY
from ..spec import RunSpec
from . import GpuCode, inputs, updates_found, worker

WORKER = worker.WORKERS / REGISTRY["tensorflow-1.9"].worker
ENVIRONMENT = REGISTRY["tensorflow-1.9"].environment
GPU_LIBRARY = "tensorflow/python/_pywrap_tensorflow_internal.so"  # under site-packages


def describe() -> dict:
    """The worker interpreter's Python, TensorFlow and numpy versions, and its CUDA build, for the run's record."""
    return worker.describe(worker.worker_python(ENVIRONMENT), WORKER, "tensorflow-1.9")


def gpu_code() -> GpuCode | str:
    """The GPU code in the worker environment's TensorFlow library (TF 1.9's tf.sysconfig has no build info), and
    the run's GPUs."""
    return worker.library_gpu_code(ENVIRONMENT, WORKER, "tensorflow-1.9", GPU_LIBRARY)


def worker_config(spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
    """What the worker builds and reads (``scratch``: where it can find files written for it): the TensorFlow
    worker's, and Keras 2's on TensorFlow 1.9."""
    shape = list(description.input_shape)
    mean, std = inputs.pixel_statistics(spec)
    config = {"plan": worker.description_plan(description),
              # images channels last, sequences as they are
              "input_shape_nhwc": [*shape[1:], shape[0]] if len(shape) == 3 else shape,
              "num_classes": description.num_classes,
              "batch_size": spec.batch_size_global, "learning_rate": spec.learning_rate,
              "optimizer": asdict(networks.optimizer(spec.network)), "threads": spec.threads, "gpus": spec.gpus,
              "seed": spec.seed, "synthetic_images": None, "synthetic_labels": None,
              "raw": REGISTRY[spec.framework].release_of == "tensorflow-nn"}
    if spec.data_mode == "synthetic":
        return {**config, **worker.synthetic_batch_files(spec, description, scratch)}
    return {**config, "files": _files(inputs.train_shards(spec)),
            "test_files": _files(inputs.test_shards(spec)) if spec.task == "accuracy" else [],
            "stored_channels": inputs.stored_shape(spec, description)[0], "input_size": spec.input_size,
            "mean": mean.tolist(), "std": std.tolist()}


def _files(shards: list[Path]) -> list[str]:
    """Each shard's TFRecord file, absolute: the worker runs in the format's directory."""
    return [str((shard / TFRECORD_FILE).absolute()) for shard in shards]


class LayerProfiler(worker.WorkerProfiler):
    METHOD = ("TF 1's tracer (session.run with RunOptions FULL_TRACE, its RunMetadata's step stats, as seed 004's "
              "timeline): each op's time on its device (a GPU's streams' kernels), by its name scope: net/<layer>/ "
              "forward, gradients/net/<layer>/ backward, <optimizer>/update_net/<layer>/ the layer's update")

    all_reduce = devices = None  # one device

    def __init__(self, harness: worker.WorkerHarness, names: list[str]):
        super().__init__(harness)
        self.names = names
        self.steps, self.layer_updates, self.update, self.update_untimed = [], None, None, None

    def collect(self, stopped: dict) -> None:
        traced = stopped["steps"]
        found = {layer for step in traced for phase in ("forward", "backward") for layer in step[phase]}
        if not found <= set(self.names):
            raise RuntimeError(f"the TensorFlow worker's trace names layers {sorted(found - set(self.names))} that "
                               f"the description has not")
        self.steps = [{name: (step["forward"].get(name, 0.0), step["backward"].get(name, 0.0)) for name in self.names}
                      for step in traced]
        self.updates(traced)

    def updates(self, traced: list[dict]) -> None:
        """Each step's update, and each layer's, from the trace's update phase."""
        self.layer_updates, self.update, self.update_untimed = updates_found(
            [{name: step["update"].get(name, 0.0) for name in self.names} for step in traced],
            "the trace holds no op of the optimizer's update (<optimizer>/update_net/...)")


class Harness(worker.WorkerHarness):
    INFERENCE_IDIOM = ("session.run of the logits on a resident batch (dropout off, batch norm's moving statistics), "
                       "in the TensorFlow worker (each call includes the runner's socket round trip)")
    FRAMEWORK, SCRIPT = "TensorFlow 1.9", WORKER

    def __init__(self, spec: RunSpec, description: networks.Network):
        self.layer_names = networks.layer_names(description)
        super().__init__(spec, description)

    def layer_profiler(self) -> LayerProfiler:
        return LayerProfiler(self, self.layer_names)

    worker_config = staticmethod(worker_config)
