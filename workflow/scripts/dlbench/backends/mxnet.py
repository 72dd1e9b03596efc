"""MXNet backend: Gluon ``HybridBlock``s, hybridised, a kvstore over the devices, and
``mx.io.ImageRecordIter`` reading the RecordIO shards.

MXNet's operators use OpenMP threads from ``OMP_NUM_THREADS``, read when the library loads: the
monitor sets it from the job's cores (left unset, MXNet 1.9 trains on one core).
"""
from __future__ import annotations

import ctypes
import itertools
import json
import math
import os
import shutil
import socket
import tempfile
import time
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import numpy as np

from .. import networks
from ..envs import cuda_wheels

# before MXNet loads: its CUDA build links CUDA 11's libraries by name
cuda_wheels.preload(cuda_wheels.PRELOADED["mxnet"])
# Read by libgomp when MXNet loads it. ImageRecordIter's decoding threads are OpenMP threads too: with
# them, the process's OpenMP threads outnumber the cores, and libgomp then lets an idle operator thread
# spin 100 times (ACTIVE: 1,000) before it sleeps on a futex, so every operator of a small network paid a
# wake-up: LeNet/MNIST from RecordIO trained at 0.65 of its synthetic rate on 2 cores (0.89 with ACTIVE).
os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")

import mxnet as mx
from mxnet import autograd, gluon
from mxnet.contrib import amp
from mxnet.gluon import nn
from mxnet.gluon.contrib.nn import HybridConcurrent

from ..formats import recordio_im2rec
from ..spec import RunSpec
from ..tasks.loop import Stamped
from . import (
    GpuCode,
    InputClock,
    Unavailable,
    cuda_of_distribution,
    inputs,
    mxnet_trace,
    require_gpus,
    require_one_batch,
)
from .record_shards import ShardBatches, test_batches


def framework_version() -> str:
    return mx.__version__


def cuda_build() -> str | None:
    """MXNet's build says CUDA or not; its version is in the wheel's name (mxnet-cu117: 11.7)."""
    if not mx.runtime.Features().is_enabled("CUDA"):
        return None
    return cuda_of_distribution("mxnet-cu") or "(version not in the package name)"


def gpu_code() -> GpuCode:
    """The GPU code in ``libmxnet.so``'s fatbinary (MXNet does not report what it was compiled for) and the
    run's GPUs as NVML lists them (envs/mxnet.cuda.requirements.txt has pyelftools and nvidia-ml-py)."""
    from ..envs import elf
    from ..hardware import gpu

    library = Path(mx.libinfo.find_lib_path()[0])
    return GpuCode.from_arch_names(f"MXNet {mx.__version__}", cuda_build(), elf.fatbin_architectures(library),
                                   gpu.visible_gpus())


PACKAGES = ("mxnet", "numpy", "opencv-python-headless")  # their versions go into the run's record


class _Residual(nn.HybridBlock):
    def __init__(self, body: nn.HybridBlock, shortcut: nn.HybridBlock | None):
        super().__init__()
        self.body, self.shortcut = body, shortcut

    def hybrid_forward(self, F, x):
        return self.body(x) + (x if self.shortcut is None else self.shortcut(x))


class _LastStep(nn.HybridBlock):
    """Gluon's ``rnn.LSTM`` over (batch, steps, features), its output at the last step. Gluon keeps a second
    bias vector per gate (``h2h_bias``); it stays zero and untrained, so the math and the trainable
    parameters are the description's."""

    def __init__(self, features: int, units: int):
        super().__init__()
        self.lstm = gluon.rnn.LSTM(units, layout="NTC", input_size=features)
        self.lstm.collect_params(".*h2h_bias").setattr("grad_req", "null")  # initialised to zeros, as all its biases

    def hybrid_forward(self, F, x):
        return F.squeeze(F.slice_axis(self.lstm(x), axis=1, begin=-1, end=None), axis=1)


class _WithLoss(nn.HybridBlock):
    """The network and its loss in one hybridised graph: the loss's operators run in the step's cached graph
    rather than one by one from Python (as TensorFlow's run inside its traced step)."""

    def __init__(self, net: nn.HybridBlock):
        super().__init__(prefix="")
        self.net, self.loss = net, gluon.loss.SoftmaxCrossEntropyLoss()

    def hybrid_forward(self, F, images, labels):
        return self.loss(self.net(images), labels)


class GluonBuilder:
    """Turns a :mod:`dlbench.networks` description into a Gluon ``HybridBlock`` (NCHW)."""

    def conv(self, layer, shape):
        return nn.Conv2D(layer.out_channels, layer.kernel, layer.stride, layer.padding, use_bias=layer.bias,
                         in_channels=shape[0])

    def batchnorm(self, layer, shape):
        return nn.BatchNorm(momentum=0.9, epsilon=layer.eps, in_channels=shape[0])  # PyTorch's momentum 0.1

    def relu(self, layer, shape):
        return nn.Activation("relu")

    def maxpool(self, layer, shape):
        return nn.MaxPool2D(layer.kernel, layer.stride, layer.padding, ceil_mode=layer.ceil_mode)

    def globalavgpool(self, layer, shape):
        return nn.GlobalAvgPool2D()

    def flatten(self, layer, shape):
        return nn.Flatten()

    def dense(self, layer, shape):
        return nn.Dense(layer.out_features, use_bias=layer.bias, in_units=shape[0])

    def dropout(self, layer, shape):
        return nn.Dropout(layer.rate)

    def lstm(self, layer, shape):
        return _LastStep(shape[1], layer.units)

    def sequential(self, children):
        block = nn.HybridSequential()
        block.add(*children)
        return block

    def concat(self, branches):
        block = HybridConcurrent(axis=1)
        block.add(*branches)
        return block

    def residual(self, body, shortcut):
        return _Residual(body, shortcut)


def build(description: networks.Network) -> nn.HybridBlock:
    return networks.build(description, GluonBuilder())


def trainable_parameters(block: nn.HybridBlock) -> int:
    """Parameters with gradients (batch norm's running statistics have none)."""
    return sum(math.prod(p.shape) for p in block.collect_params().values() if p.grad_req != "null")


def forward_shape(block: nn.HybridBlock, images: np.ndarray) -> tuple:
    """The output shape for float32 NCHW ``images`` (inference mode; initialises on the CPU if needed)."""
    block.initialize(mx.init.Xavier())
    return tuple(block(mx.nd.array(images)).shape)


class RecordBatches(ShardBatches):
    """Endless global batches from the RecordIO shards: ``ImageRecordIter`` decodes, crops (ILSVRC12:
    256 -> 224), mirrors colour images and normalises in ``preprocess_threads`` threads
    (:func:`inputs.image_record_options`)."""

    def __init__(self, spec: RunSpec, description: networks.Network, rank: int = 0, workers: int = 1):
        """Of ``workers`` processes, each reads its part of every shard (``part_index``), its share of the batch."""
        shards = inputs.train_shards(spec)
        images = sum(len((shard / recordio_im2rec.IDX).read_text().splitlines()) for shard in shards)
        require_one_batch(spec, images, spec.batch_size_global)
        self.options = inputs.image_record_options(spec, description, workers)
        part = {"num_parts": workers, "part_index": rank} if workers > 1 else {}
        super().__init__(shards, lambda shard: self._iterator(shard, **self.options, **part), spec.seed)
        self.test_shards = inputs.test_shards(spec) if spec.task == "accuracy" else []

    @staticmethod
    def _iterator(shard: Path, **options) -> mx.io.ImageRecordIter:
        return mx.io.ImageRecordIter(path_imgrec=str(shard / recordio_im2rec.REC),
                                     path_imgidx=str(shard / recordio_im2rec.IDX), **options)

    def test(self) -> Iterator[tuple[mx.nd.NDArray, mx.nd.NDArray]]:
        """The test split once, shard after shard in stored order, centre-cropped and not mirrored."""
        options = inputs.evaluation_options(self.options)
        return test_batches(self._iterator(shard, **options) for shard in self.test_shards)


AMP_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def require_bf16_kernels() -> None:
    """MXNet's bf16 on CPUs is oneDNN's, whose 2.x kernels need AVX-512: on other CPUs every bf16 operator
    fails, in a run first deep in its timed loop with an opaque error, so one tiny operator is tried first."""
    data, weight = (mx.nd.amp_cast(mx.nd.ones(shape), dtype=amp.amp.bfloat16) for shape in ((1, 4), (2, 4)))
    try:
        mx.nd.FullyConnected(data, weight, no_bias=True, num_hidden=2).wait_to_read()
    except mx.base.MXNetError as error:
        raise Unavailable(f"bf16 on cpu: MXNet {mx.__version__}'s oneDNN has no bf16 kernels for this CPU (oneDNN "
                          f"2.x runs bf16 on AVX-512 CPUs only): {str(error).splitlines()[0]}") from error


class LayerProfiler(mxnet_trace.TraceReader):
    """MXNet's profiler over the steps taken under it, its Chrome trace read back (:class:`mxnet_trace.TraceReader`).
    MXNet bulks a hybridised graph's operators into one event; under the profiler the graph is rebuilt with bulking
    off (MXNET_EXEC_BULK_EXEC_TRAIN=0; aggregate stats on, which keeps the engine from bulking the imperative
    ones), so the profiled steps run unbulked: their overhead includes that."""

    METHOD = mxnet_trace.METHOD

    def __init__(self, trained: nn.HybridBlock, layers: list[str]):  # trained: the block the steps call
        super().__init__(layers)
        self.trained = trained

    def __enter__(self) -> Self:
        self.directory = Path(tempfile.mkdtemp(prefix="dlbench-mxprofile-"))
        self.bulking = os.environ.get(mxnet_trace.BULKING)
        self._rebuild("0")
        mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(self.directory / "trace.json"))
        mx.profiler.set_state("run")
        return self

    def __exit__(self, *exception) -> None:
        mx.nd.waitall()
        mx.profiler.set_state("stop")
        try:
            if exception[0] is None:
                mx.profiler.dump()
                self.read(json.loads((self.directory / "trace.json").read_text())["traceEvents"])
        finally:
            self._rebuild(self.bulking)
            shutil.rmtree(self.directory, ignore_errors=True)

    def _rebuild(self, bulking: str | None) -> None:
        """Hybridising again drops the cached graph: the next step builds it with this bulking setting."""
        mxnet_trace.set_bulking(bulking)
        self.trained.hybridize(static_alloc=True, static_shape=True)


def optimizer(rule: networks.Optimizer, learning_rate: float) -> tuple[str, dict]:
    """The network's optimizer as gluon.Trainer takes it."""
    if rule.kind == "rmsprop":
        return "rmsprop", {"learning_rate": learning_rate, "gamma1": rule.rho, "epsilon": rule.epsilon}
    return "sgd", {"learning_rate": learning_rate, "momentum": rule.momentum}


HOSTS_KEY, HOST_BYTES = 2**30, 64  # a kvstore key apart from the trainer's (a parameter's index in the network)


def _gathered_hosts(kvstore: mx.kv.KVStore) -> list[str]:
    """Each worker's host name, in the kvstore's rank order: each pushes its name into its row of a zero
    matrix, and the servers, before the trainer hands them an optimizer (at its first step), sum the rows."""
    rows = np.zeros((kvstore.num_workers, HOST_BYTES), dtype=np.float32)
    name = socket.gethostname().encode()[:HOST_BYTES]
    rows[kvstore.rank, :len(name)] = list(name)
    kvstore.init(HOSTS_KEY, mx.nd.zeros(rows.shape))
    kvstore.push(HOSTS_KEY, mx.nd.array(rows))
    gathered = mx.nd.zeros(rows.shape)
    kvstore.pull(HOSTS_KEY, out=gathered)
    return [bytes(row[row > 0].astype(np.uint8).tolist()).decode() for row in gathered.asnumpy()]


def check_weights_are_the_servers(kvstore: mx.kv.KVStore, net: nn.HybridBlock) -> None:
    """Raise unless this worker's trainable weights are those the servers hold (gluon.Trainer's key of a
    parameter is its index in the sorted names of the network's). Every worker that passes holds the same."""
    differing = []
    for key, (_, parameter) in enumerate(sorted(net.collect_params().items())):
        if parameter.grad_req == "null":  # batch norm's running statistics stay each worker's own
            continue
        local = parameter.data(parameter.list_ctx()[0])
        served = mx.nd.zeros(local.shape, ctx=local.context, dtype=local.dtype)
        kvstore.pull(key, out=served)
        if not np.allclose(local.asnumpy(), served.asnumpy(), rtol=1e-6, atol=1e-9):
            differing.append(parameter.name)
    if differing:
        raise RuntimeError(f"worker {kvstore.rank} of {kvstore.num_workers} holds other weights than the parameter "
                           f"servers ({', '.join(differing[:4])}): the workers did not train as one")


class _Context(ctypes.Structure):  # mxnet::Context, as the C API takes it
    _fields_ = [("dev_type", ctypes.c_int), ("dev_id", ctypes.c_int32)]


_ENGINE_FUNCTION = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)  # EngineSyncFunc(run context, parameter)
_NO_DELETER = ctypes.cast(None, ctypes.CFUNCTYPE(None, ctypes.c_void_p))


class StepStamps:
    """Each step's completion, stamped by MXNet's engine: a host function pushed behind the step
    (``MXEnginePushSyncND``) reads the network's parameters, so it runs once the step's update has
    written them, and takes ``time.perf_counter()``. The timed loop need not wait for each step to
    time it: a wait for every step's loss cost LeNet 4-5 % of its 15-ms step on 2 cores, the Python
    thread waking beside the operators' OpenMP threads once a step."""

    def __init__(self, parameters: list[mx.nd.NDArray]):
        self.parameters = parameters  # the handles below stay theirs
        self.read = (ctypes.c_void_p * len(parameters))(*(array.handle.value for array in parameters))
        self.waiting: weakref.WeakValueDictionary[int, _StepStamp] = weakref.WeakValueDictionary()  # none kept
        self.keys = itertools.count(1)  # a parameter of 0 would reach the function as None
        self.function = _ENGINE_FUNCTION(self._stamp)  # held: the engine calls it until the last step is done
        self.context = _Context(mx.cpu().device_typeid, 0)

    def _stamp(self, _run_context, key: int) -> None:
        if stamp := self.waiting.get(key):
            stamp.time = time.perf_counter()

    def push(self) -> _StepStamp:
        """The stamp of the step just dispatched."""
        key = next(self.keys)
        # The function's own array, written by it: the engine fails it, rather than run the function, when an
        # operation of the step failed, and the wait on it raises that failure.
        self.waiting[key] = stamp = _StepStamp(mx.nd.empty((1,)))
        writes = (ctypes.c_void_p * 1)(stamp.written.handle.value)
        mx.base.check_call(mx.base._LIB.MXEnginePushSyncND(
            self.function, ctypes.c_void_p(key), _NO_DELETER, ctypes.byref(self.context), self.read,
            len(self.parameters), writes, 1, None, 0, None))  # no operator name: out of mx.profiler's trace
        return stamp


class _StepStamp(Stamped):
    COMPLETION = ("MXNet's engine: a host function pushed behind the step's weight update (MXEnginePushSyncND) "
                  "stamps it; the loop waits for the steps at its progress lines only")

    def __init__(self, written: mx.nd.NDArray):
        self.written, self.time = written, None

    def __call__(self) -> float:
        self.written.wait_to_read()
        return self.time


def _contexts(spec: RunSpec) -> list[mx.Context]:
    if spec.gpus == 0:
        return [mx.cpu()]
    require_gpus(spec, spec.gpus, mx.context.num_gpus(), f"MXNet {mx.__version__}")
    return [mx.gpu(index) for index in range(spec.gpus)]


class Harness:
    """``contexts`` overrides the spec's (tests: two CPU contexts for the multi-device path)."""

    INFERENCE_IDIOM = "the hybridised Gluon block called outside autograd.record (predict mode)"

    def __init__(self, spec: RunSpec, description: networks.Network, contexts: list[mx.Context] | None = None):
        self.contexts = contexts or _contexts(spec)
        mx.random.seed(spec.seed)
        # MXNet's AMP: operators on its lists run in the target dtype, weights stay fp32 (bf16 is
        # oneDNN's, on CPUs); it patches the operators, so before the network is built.
        if spec.precision == "bf16" and not spec.gpus:
            require_bf16_kernels()
        if spec.precision in AMP_DTYPES:
            amp.init(target_dtype=AMP_DTYPES[spec.precision])
        self.profiled_layers = mxnet_trace.profiled_layers(description) if spec.task == "profile" else []
        self.net = build(description)
        self.net.initialize(mx.init.Xavier(), ctx=self.contexts)
        self.with_loss = _WithLoss(self.net)
        self.with_loss.hybridize(static_alloc=True, static_shape=True)  # the network's blocks too
        # Data parallelism: the global batch is split over the processes (workers) and their contexts. One
        # process's kvstore sums its contexts' gradients; over processes, the parameter servers
        # (dlbench.run.ps_lite) sum all workers' and apply the optimizer, and the workers pull the weights.
        self.kvstore = kvstore = mx.kv.create("dist_sync") if spec.processes > 1 else None
        rank, workers = (kvstore.rank, kvstore.num_workers) if kvstore else (0, 1)
        if workers != spec.processes:
            raise RuntimeError(f"{spec.device} trains over {spec.processes} processes; {workers} workers joined")
        self.trainer = gluon.Trainer(self.net.collect_params(),
                                     *optimizer(networks.optimizer(spec.network), spec.learning_rate),
                                     kvstore=kvstore or ("device" if len(self.contexts) > 1 else None))
        if kvstore:
            hosts = ", ".join(_gathered_hosts(kvstore))
            print(f"worker {rank} of {workers}: batch {spec.batch_size_global // workers}, {hosts}", flush=True)
            self.data_parallel = (f"kvstore dist_sync over {workers} processes on {hosts}: gradients pushed to "
                                  f"{workers} parameter servers, which sum them and apply the optimizer")
        elif len(self.contexts) > 1:
            self.data_parallel = (f"gluon.Trainer's kvstore 'device' over {len(self.contexts)} contexts: "
                                  "gradients summed")
        self.loss_scaling = spec.precision == "fp16"
        if self.loss_scaling:
            amp.init_trainer(self.trainer)  # dynamic loss scaling
        self.batch, self.share = spec.batch_size_global, spec.batch_size_global // workers
        if spec.data_mode == "synthetic":
            images, labels = inputs.normalised_synthetic_batch(spec, description)
            share = slice(rank * len(images) // workers, (rank + 1) * len(images) // workers)
            resident = self._split(mx.nd.array(images[share]), mx.nd.array(labels[share]))
            self.next_batch = InputClock(lambda: resident)
        else:
            self.batches = batches = RecordBatches(spec, description, rank, workers)
            self.next_batch = InputClock(lambda: self._split(*batches.next()))
        # ImageRecordIter's next() recycles an old batch with NDArray::WaitToWrite, an engine operation
        # queued behind the step in flight on the CPU's engine worker: on a CPU it waits for that step, and
        # the input clock would hold the step's backward pass (38 % "input wait" on AlexNet/CIFAR10 whose
        # rate was 0.93 of the synthetic one). The engine is drained before the clock starts instead:
        # no overlap is lost that the iterator's own wait did not already take.
        self.drain_before_fetch = spec.data_mode != "synthetic" and not spec.gpus
        # Stamped steps run ahead of the loop, up to its next progress line: on resident batches only, as
        # ImageRecordIter's next() waits on the engine to recycle a batch, which the input clock would count.
        self.stamps_steps = spec.data_mode == "synthetic"
        self.stamps = None  # the parameters' arrays exist once the first step has inferred their shapes
        self.losses = None

    def _split(self, images, labels) -> list[tuple]:
        return list(zip(gluon.utils.split_and_load(images, self.contexts),
                        gluon.utils.split_and_load(labels, self.contexts)))

    def step(self):
        if self.drain_before_fetch:
            mx.nd.waitall()
        parts = self.next_batch()
        with autograd.record():
            losses = [self.with_loss(images, labels) for images, labels in parts]
            if self.loss_scaling:
                with amp.scale_loss(losses, self.trainer) as scaled:
                    autograd.backward(scaled)
        if not self.loss_scaling:
            autograd.backward(losses)
        self.trainer.step(self.batch)
        self.losses = losses
        if self.stamps_steps:
            self.stamps = self.stamps or StepStamps([array for parameter in self.net.collect_params().values()
                                                     for array in parameter.list_data()])
            return self.stamps.push()

        def wait_for_losses() -> None:
            # The engine runs the step asynchronously; its losses are ready when its forward pass is.
            # The loop's final waitall keeps the summed time exact.
            for loss in losses:
                loss.wait_to_read()
        return wait_for_losses

    def inference(self, batch_size: int):
        ((images, _),) = self.next_batch()  # one context
        images = images[:batch_size]

        def forward():
            output = self.net(images)  # outside autograd.record: no gradient, dropout off, running statistics
            return output.wait_to_read
        return forward

    def layer_profiler(self) -> LayerProfiler:
        mxnet_trace.require_one_device(len(self.contexts))
        return LayerProfiler(self.with_loss, self.profiled_layers)

    def test_logits(self):
        for images, labels in self.batches.test():
            # outside autograd.record: dropout off, batch norm's running statistics; on the first context
            yield self.net(images.as_in_context(self.contexts[0])).astype("float32").asnumpy(), labels.asnumpy()

    def synchronize(self) -> None:
        mx.nd.waitall()

    def final_loss(self) -> float | None:
        """The last step's loss on this process's share; over several processes, once this worker's weights are
        seen to be the servers' (each worker checks: a worker that fails ends the group, and the run)."""
        if self.kvstore:
            check_weights_are_the_servers(self.kvstore, self.net)
        if self.losses is None:
            return None
        return float(sum(loss.sum().asscalar() for loss in self.losses) / self.share)

    def allocator_peak_mib(self) -> None:
        return None  # MXNet 1.9 reports free/total GPU memory, not its allocator's peak

    def input_wait_seconds(self) -> float:
        return self.next_batch.seconds
