"""The thesis's MXNet (1.2.0): Gluon under the CPython 3.6 it ran on, in a worker process
(workflow/scripts/workers/mxnet_worker.py, driven as :mod:`dlbench.backends.worker` drives every worker). The
network goes to the worker as the description's layers (:class:`worker.DescriptionPlanner`); the worker builds
them as today's MXNet backend does, and reads the RecordIO shards with ImageRecordIter's settings of today's
(:func:`inputs.image_record_options`). The worker replies when its step's update has finished.
"""
from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from .. import networks
from ..formats import RECORDIO_IDX, RECORDIO_REC
from ..registry import REGISTRY
from ..spec import RunSpec
from . import GpuCode, inputs, mxnet_trace, require_one_batch, worker

WORKER = worker.WORKERS / REGISTRY["mxnet-1.2"].worker
ENVIRONMENT = REGISTRY["mxnet-1.2"].environment
GPU_LIBRARY = "mxnet/libmxnet.so"  # under site-packages


def describe() -> dict:
    """The worker interpreter's Python, MXNet and numpy versions, and its CUDA build, for the run's record."""
    return worker.describe(worker.worker_python(ENVIRONMENT), WORKER, "mxnet-1.2")


def gpu_code() -> GpuCode | str:
    """The GPU code in the worker environment's ``libmxnet.so``, and the run's GPUs."""
    return worker.library_gpu_code(ENVIRONMENT, WORKER, "mxnet-1.2", GPU_LIBRARY)


def worker_config(spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
    """What the worker builds and reads (``scratch``: where it can find files written for it): the MXNet worker's,
    and Keras 2's on MXNet 1.2."""
    config = {"plan": worker.description_plan(description),
              "input_shape": list(description.input_shape), "num_classes": description.num_classes,
              "batch_size": spec.batch_size_global, "learning_rate": spec.learning_rate,
              "optimizer": asdict(networks.optimizer(spec.network)), "gpus": spec.gpus, "seed": spec.seed,
              "synthetic_images": None, "synthetic_labels": None}
    if spec.data_mode == "synthetic":
        return {**config, **worker.synthetic_batch_files(spec, description, scratch)}
    shards = inputs.train_shards(spec)
    require_one_batch(spec, sum(len((shard / RECORDIO_IDX).read_text().splitlines()) for shard in shards),
                      spec.batch_size_global)
    options = inputs.image_record_options(spec, description)
    config.update(shards=_shards(shards), record_options={**options, "data_shape": list(options["data_shape"])},
                  test_shards=_shards(inputs.test_shards(spec)) if spec.task == "accuracy" else [],
                  test_options={**inputs.evaluation_options(options), "data_shape": list(options["data_shape"])})
    return config


def _shards(shards: list[Path]) -> list[dict]:
    """Each shard's files, absolute: the worker runs in the format's directory."""
    return [{"rec": str((shard / RECORDIO_REC).absolute()), "idx": str((shard / RECORDIO_IDX).absolute())}
            for shard in shards]


class LayerProfiler(worker.WorkerProfiler, mxnet_trace.TraceReader):
    """MXNet 1.2's profiler in the worker over the steps taken under it; its Chrome trace read back here as today's
    MXNet backend reads its own (:class:`mxnet_trace.TraceReader`). MXNet 1.2's hybridised Flatten is a Reshape."""

    METHOD = mxnet_trace.METHOD

    def __init__(self, harness: worker.WorkerHarness, layers: list[str]):
        worker.WorkerProfiler.__init__(self, harness)
        mxnet_trace.TraceReader.__init__(self, layers, operators={"flatten": "Reshape"})

    def collect(self, stopped: dict) -> None:
        trace = Path(stopped["trace"])  # in the worker's directory, removed with it
        self.read(json.loads(trace.read_text())["traceEvents"])


class Harness(worker.WorkerHarness):
    INFERENCE_IDIOM = ("the hybridised Gluon block called outside autograd.record (predict mode), in the MXNet "
                       "worker (each call includes the runner's socket round trip)")
    FRAMEWORK, SCRIPT = "MXNet 1.2", WORKER

    def __init__(self, spec: RunSpec, description: networks.Network):
        self.profiled_layers = mxnet_trace.profiled_layers(description) if spec.task == "profile" else []
        super().__init__(spec, description)
        self.gpus = spec.gpus
        if spec.gpus > 1:
            self.data_parallel = f"gluon.Trainer's kvstore 'device' over {spec.gpus} GPUs: gradients summed"

    def layer_profiler(self) -> LayerProfiler:
        mxnet_trace.require_one_device(self.gpus)
        return LayerProfiler(self, self.profiled_layers)

    worker_config = staticmethod(worker_config)
