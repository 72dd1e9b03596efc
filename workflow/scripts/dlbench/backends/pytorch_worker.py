"""The thesis's PyTorch, at PyPI's oldest release (1.0.0; the thesis ran 0.4, which PyPI does not have): eager
PyTorch under the CPython 3.6 it ran on, in a worker process (workflow/scripts/workers/pytorch_worker.py, driven as
:mod:`dlbench.backends.worker` drives every worker). The network goes to the worker as the description's layers
(:class:`worker.DescriptionPlanner`); the worker builds them as today's PyTorch backend does and reads the LMDB shards
with today's backend's reader (:mod:`.lmdb_records`), whose keys the runner reads first with dlbench's checks of a
shard. The worker replies when its step has finished.
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from .. import networks
from ..registry import REGISTRY
from ..spec import RunSpec
from . import GpuCode, inputs, require_one_batch, worker
from .lmdb_records import LmdbRecords

WORKER = worker.WORKERS / REGISTRY["pytorch-1.0"].worker
ENVIRONMENT = REGISTRY["pytorch-1.0"].environment
GPU_LIBRARY = "torch/lib/libcaffe2_gpu.so"  # under site-packages: 1.0's CUDA kernels


def describe() -> dict:
    """The worker interpreter's Python, PyTorch, numpy, lmdb and protobuf versions, and its CUDA build, for the run's
    record."""
    return worker.describe(worker.worker_python(ENVIRONMENT), WORKER, "pytorch-1.0")


def gpu_code() -> GpuCode | str:
    """The GPU code in the worker environment's ``libcaffe2_gpu.so`` (1.0's torch.cuda has no arch list), and the
    run's GPUs."""
    return worker.library_gpu_code(ENVIRONMENT, WORKER, "pytorch-1.0", GPU_LIBRARY)


def worker_config(spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
    """What the worker builds and reads (``scratch``: where it can find files written for it)."""
    config = {"plan": worker.description_plan(description), "input_shape": list(description.input_shape),
              "num_classes": description.num_classes, "batch_size": spec.batch_size_global,
              "learning_rate": spec.learning_rate, "optimizer": asdict(networks.optimizer(spec.network)),
              "threads": spec.threads, "loader_workers": spec.loader_workers, "gpus": spec.gpus, "seed": spec.seed,
              "synthetic_images": None, "synthetic_labels": None}
    if spec.data_mode == "synthetic":
        return {**config, **worker.synthetic_batch_files(spec, description, scratch)}
    shape = inputs.stored_shape(spec, description)
    shards = inputs.train_shards(spec)
    require_one_batch(spec, len(LmdbRecords(shards, shape)), spec.batch_size_global)
    test_shards = inputs.test_shards(spec) if spec.task == "accuracy" else []
    if test_shards:
        LmdbRecords(test_shards, shape)  # its checks of a shard
    mean, std = inputs.pixel_statistics(spec)
    return {**config, "shards": [str(shard.absolute()) for shard in shards], "stored_shape": list(shape),
            "test_shards": [str(shard.absolute()) for shard in test_shards], "mean": mean.tolist(),
            "std": std.tolist()}


class Harness(worker.WorkerHarness):
    INFERENCE_IDIOM = ("model.eval() called under torch.no_grad() (1.0 has no inference_mode), in the PyTorch worker "
                       "(each call includes the runner's socket round trip)")
    FRAMEWORK, SCRIPT = "PyTorch 1.0", WORKER

    def __init__(self, spec: RunSpec, description: networks.Network):
        super().__init__(spec, description)
        if spec.gpus > 1:
            self.data_parallel = (f"nn.DataParallel over {spec.gpus} GPUs in one process: the batch scattered, "
                                  "gradients summed on the first")

    worker_config = staticmethod(worker_config)
