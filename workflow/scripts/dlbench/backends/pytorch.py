"""PyTorch backend: a builder for the network descriptions and a training step, eager or
``torch.compile``d, in fp32 (TF32 off or on) or mixed precision (``torch.autocast``; fp16 with a
``GradScaler``), as PyTorch's AMP recipe has it."""
from __future__ import annotations

import atexit
import bisect
import contextlib
import functools
import math
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Self

import numpy as np
import torch
from torch import distributed, nn
from torch.nn.parallel import DistributedDataParallel
from torch.profiler import ProfilerActivity
from torch.utils.data import DataLoader

from .. import networks
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import (
    UPDATE_SCOPE,
    GpuCode,
    InputClock,
    Unavailable,
    inputs,
    require_gpus,
    require_one_batch,
    whole_update,
)
from .lmdb_records import LmdbRecords, epochs, in_order, shuffled_runs
from .torch_modules import Concat, LastStep, Residual, initialised


def framework_version() -> str:
    return torch.__version__


def cuda_build() -> str | None:
    return torch.version.cuda


def gpu_code() -> GpuCode:
    """The architectures torch was compiled for and the GPUs it sees. Also for Keras on PyTorch and ONNX Runtime's
    export (whose own CUDA kernels its build does not list)."""
    gpus = [(torch.cuda.get_device_name(index), 10 * major + minor)
            for index in range(torch.cuda.device_count())
            for major, minor in [torch.cuda.get_device_capability(index)]]
    return GpuCode.from_arch_names(f"torch {torch.__version__}", torch.version.cuda, torch.cuda.get_arch_list(), gpus)


def set_tf32(precision: str) -> None:
    """TF32 in matrix products and cuDNN convolutions exactly when the precision is tf32 (PyTorch's
    own default is TF32 for convolutions only). Also for Keras on PyTorch."""
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"


def gpu_allocator_peak_mib(devices: list[torch.device]) -> float:
    """PyTorch's caching allocator's peak over the run, summed over the GPUs. Also for Keras on PyTorch."""
    return sum(torch.cuda.max_memory_allocated(device) for device in devices) / 2**20


PACKAGES = ("torch", "numpy", "lmdb", "protobuf")  # their versions go into the run's record


class TorchBuilder:
    """Turns a :mod:`dlbench.networks` description into an ``nn.Module``."""

    def conv(self, layer, shape):
        return initialised(nn.Conv2d(shape[0], layer.out_channels, layer.kernel, layer.stride, layer.padding,
                                      bias=layer.bias))

    def batchnorm(self, layer, shape):
        return (nn.BatchNorm2d if len(shape) == 3 else nn.BatchNorm1d)(shape[0], eps=layer.eps)

    def relu(self, layer, shape):
        return nn.ReLU(inplace=True)

    def maxpool(self, layer, shape):
        return nn.MaxPool2d(layer.kernel, layer.stride, layer.padding, ceil_mode=layer.ceil_mode)

    def globalavgpool(self, layer, shape):
        return nn.AdaptiveAvgPool2d(1)

    def flatten(self, layer, shape):
        return nn.Flatten()

    def dense(self, layer, shape):
        return initialised(nn.Linear(shape[0], layer.out_features, bias=layer.bias))

    def dropout(self, layer, shape):
        return nn.Dropout(layer.rate)

    def lstm(self, layer, shape):
        return LastStep(shape[1], layer.units)

    def sequential(self, children):
        return nn.Sequential(*children)

    def concat(self, branches):
        return Concat(branches)

    def residual(self, body, shortcut):
        return Residual(body, shortcut)


def build(description: networks.Network) -> nn.Module:
    return networks.build(description, TorchBuilder())


def trainable_parameters(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def forward_shape(model: nn.Module, images: np.ndarray) -> tuple:
    """The output shape for float32 NCHW ``images`` (inference mode)."""
    with torch.no_grad():
        return tuple(model.eval()(torch.from_numpy(images)).shape)


def _process_group(spec: RunSpec) -> tuple[int, int]:
    """This process's rank and the number of processes. A run over several processes (torchrun
    starts them and sets RANK, WORLD_SIZE, MASTER_ADDR) joins their group: NCCL on GPUs, gloo on CPUs."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world != spec.processes:
        raise RuntimeError(f"{spec.device} trains over {spec.processes} processes; {world} were started")
    if world == 1:
        return 0, 1
    if spec.gpus > 1:
        raise Unavailable(f"{spec.device}: one GPU per process ({spec.processes * spec.gpus}xgpu1) is wired, "
                          "not several")
    distributed.init_process_group("nccl" if spec.gpus else "gloo")
    # Left to the interpreter's teardown, gloo's threads may still hold tensors of finished work, and freeing them
    # then aborts the process (SIGABRT; pytorch/pytorch#179291): a 2xcpu run's second rank, after the first had
    # written an ok result, under a loaded make test. Destroyed while the interpreter is whole, as PyTorch's
    # documentation asks of every trainer process.
    atexit.register(distributed.destroy_process_group)
    return distributed.get_rank(), world


def _devices(spec: RunSpec) -> list[torch.device]:
    """The process's GPUs: the ``gpus`` after those of the processes before it on this machine."""
    if spec.gpus == 0:
        return [torch.device("cpu")]
    first = int(os.environ.get("LOCAL_RANK", "0")) * spec.gpus
    require_gpus(spec, first + spec.gpus, torch.cuda.device_count(), f"torch {torch.__version__}")
    return [torch.device("cuda", index) for index in range(first, first + spec.gpus)]


class LmdbDataset(torch.utils.data.Dataset):
    """:class:`LmdbRecords` for a DataLoader: whole batches through ``__getitems__``, each worker
    with its own handles and random stream."""

    def __init__(self, shards: list[Path], input_shape: tuple, seed: int = 0, augment: bool = True):
        self.records = LmdbRecords(shards, input_shape, seed, augment)

    def __len__(self) -> int:
        return len(self.records)

    def __getitems__(self, indices: list[int]) -> tuple[np.ndarray, np.ndarray]:
        worker = torch.utils.data.get_worker_info()
        return self.records.batch(indices, worker.id if worker else 0)

    def __getitem__(self, index: int):
        images, labels = self.__getitems__([index])
        return images[0], labels[0]


class ShuffledRuns(torch.utils.data.Sampler):
    """:func:`shuffled_runs` as a batch sampler: a new order of the runs every epoch. Of ``world`` processes,
    each takes every ``world``-th run of the same order from its ``rank`` on (as DistributedSampler shares an
    epoch), so that an epoch of the group reads each stored image once; the generator is the same in all."""

    def __init__(self, size: int, batch_size: int, generator: torch.Generator, rank: int = 0, world: int = 1):
        self.size, self.batch_size, self.generator = size, batch_size, generator
        self.rank, self.world = rank, world

    def __len__(self) -> int:
        return self.size // self.batch_size // self.world

    def __iter__(self):
        order = torch.randperm(self.size // self.batch_size, generator=self.generator).tolist()
        return shuffled_runs(self.size, self.batch_size, order[self.rank::self.world][:len(self)])


def _as_tensors(batch: tuple[np.ndarray, np.ndarray]) -> tuple[torch.Tensor, torch.Tensor]:
    images, labels = batch
    return torch.from_numpy(images), torch.from_numpy(labels)


class Batches:
    """Endless batches: synthetic (one resident batch) or shuffled epochs of a dataset."""

    def __init__(self, spec: RunSpec, description: networks.Network, device: torch.device, rank: int = 0,
                 world: int = 1):
        """The process's share of the global batch: ``world`` processes each train on a slice."""
        mean, std = inputs.pixel_statistics(spec)
        per_channel = (1, -1, *[1] * (len(description.input_shape) - 1))  # channels follow the batch axis
        self.mean = torch.from_numpy(mean).to(device).view(per_channel)
        self.std = torch.from_numpy(std).to(device).view(per_channel)
        self.device, self.batch = device, spec.batch_size_global // world
        self.spec, self.description = spec, description
        self.memory_format = memory_format(spec, description)  # the model's
        if spec.data_mode == "synthetic":
            share = slice(rank * self.batch, (rank + 1) * self.batch)
            images, labels = _as_tensors(inputs.synthetic_batch(spec, description))
            self.synthetic = (self._normalise(images[share].to(device)), labels[share].to(device))
            return
        self.synthetic = None
        dataset = LmdbDataset(inputs.train_shards(spec), inputs.stored_shape(spec, description), spec.seed + rank)
        require_one_batch(spec, len(dataset), spec.batch_size_global)
        workers = spec.loader_workers
        generator = torch.Generator().manual_seed(spec.seed)  # one order, shared out
        loader = DataLoader(dataset, batch_sampler=ShuffledRuns(len(dataset), self.batch, generator, rank, world),
                            num_workers=workers, persistent_workers=workers > 0, prefetch_factor=4 if workers else None,
                            pin_memory=device.type == "cuda", collate_fn=_as_tensors)
        self.iterator = epochs(loader)

    def _normalise(self, images: torch.Tensor) -> torch.Tensor:
        images = images.float().sub_(self.mean).div_(self.std)
        channels, *size = self.description.input_shape
        if images.shape[1:] != self.description.input_shape:  # a case's input_size: resized, made RGB, on the device
            images = nn.functional.interpolate(images, size=size, mode="bilinear", align_corners=False)
            images = images.expand(-1, channels, -1, -1)
        return images.contiguous(memory_format=self.memory_format)

    def test(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        """The test split once, in stored order, without augmentation, in the training batches' loader."""
        dataset = LmdbDataset(inputs.test_shards(self.spec), inputs.stored_shape(self.spec, self.description),
                              augment=False)
        loader = DataLoader(dataset, batch_sampler=list(in_order(len(dataset), self.batch)),
                            num_workers=self.spec.loader_workers, pin_memory=self.device.type == "cuda",
                            collate_fn=_as_tensors)
        for images, labels in loader:
            yield self._normalise(images.to(self.device, non_blocking=True)), labels

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self.synthetic is not None:
            return self.synthetic
        images, labels = next(self.iterator)
        images = images.to(self.device, non_blocking=True)
        return self._normalise(images), labels.to(self.device, non_blocking=True)


@contextlib.contextmanager
def module_scopes(modules: dict[str, nn.Module]):
    """While open, each description layer's module call runs inside a ``record_function`` named after the
    layer (module hooks)."""
    scopes, handles = {}, []

    def enter(name: str, module, args) -> None:
        scopes[name] = torch.profiler.record_function(name).__enter__()

    def leave(name: str, module, args, output) -> None:
        scopes.pop(name).__exit__(None, None, None)
    for name, module in modules.items():
        handles += [module.register_forward_pre_hook(functools.partial(enter, name)),
                    module.register_forward_hook(functools.partial(leave, name))]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


class LayerProfiler:
    """``torch.profiler`` over the steps taken under it. ``scopes`` wraps each description layer's call in
    a ``record_function`` named after it (:func:`module_scopes`; Keras's layers on torch:
    keras_api.call_scopes): its forward time is that scope's; its backward time is that of the autograd
    functions whose sequence numbers the ops in its scope were given (the link PyTorch's own profiler
    keeps between a forward op and its backward). CPU time on a CPU; on a GPU, the time of the CUDA
    kernels they launched. A step begins with the first layer's call. Over several processes
    (DistributedDataParallel) each profiles its own steps, the first gathers them all (``devices``), and
    each step's all-reduces (gloo's or NCCL's, which run beside the backward pass) are timed apart
    (``all_reduce``). The optimizer's update is timed whole (``update``): torch.optim's own ``Optimizer.step#``
    record_function (Keras on torch: a ``weight_update`` one around its optimizer's ``apply``); PyTorch updates
    every weight in one call (its foreach kernels on GPUs), so the update is no layer's."""

    METHOD = ("torch.profiler: a record_function per description layer (module hooks), each layer's backward "
              "the autograd functions of its ops' sequence numbers, the optimizer's step timed whole")
    BACKWARD = "autograd::engine::evaluate_function: "
    ALL_REDUCE = ("gloo:all_reduce", "nccl:all_reduce")  # the process group's own events
    UPDATE = ("Optimizer.step#", UPDATE_SCOPE)  # torch.optim's record_function of a step: Optimizer.step#SGD.step

    def __init__(self, layers: list[str], cuda: bool, scopes: contextlib.AbstractContextManager,
                 method: str = METHOD):
        self.layers, self.cuda, self.scopes, self.METHOD = layers, cuda, scopes, method
        self.steps, self.all_reduce, self.devices, self.layer_updates, self.update = [], None, None, None, None
        self.update_untimed = "the trace was not read"

    def __enter__(self) -> Self:
        self.scopes.__enter__()
        activities = [ProfilerActivity.CPU, *[ProfilerActivity.CUDA] * self.cuda]
        self.profiler = torch.profiler.profile(activities=activities)
        self.profiler.__enter__()
        return self

    def __exit__(self, *exception) -> None:
        self.profiler.__exit__(*exception)
        self.scopes.__exit__(*exception)
        if exception[0] is None:
            self.steps = self._per_step(self.profiler.events())
            if distributed.is_initialized() and distributed.get_world_size() > 1:
                self.devices = [None] * distributed.get_world_size()
                distributed.all_gather_object(self.devices, self.steps)

    def _seconds(self, event) -> float:
        return (event.device_time_total if self.cuda else event.time_range.elapsed_us()) / 1e6

    def _per_step(self, events) -> list[dict[str, tuple[float, float]]]:
        first, layers = self.layers[0], set(self.layers)
        scopes = [event for event in events if event.name in layers]
        starts = sorted(event.time_range.start for event in scopes if event.name == first)
        times = [{name: [0.0, 0.0] for name in self.layers} for _ in starts]
        owners = {}  # an op's sequence number -> (step, layer) of the scope it ran in
        for event in scopes:
            step = bisect.bisect_right(starts, event.time_range.start) - 1
            times[step][event.name][0] += self._seconds(event)
            stack = list(event.cpu_children)
            while stack:
                child = stack.pop()
                if child.sequence_nr >= 0:
                    owners[child.sequence_nr] = (step, event.name)
                stack += child.cpu_children
        reducing, updating = [0.0 for _ in starts], [0.0 for _ in starts]
        for event in events:
            step = bisect.bisect_right(starts, event.time_range.start) - 1
            if event.name.startswith(self.BACKWARD) and event.sequence_nr in owners:
                step, name = owners[event.sequence_nr]
                times[step][name][1] += self._seconds(event)
            elif event.name in self.ALL_REDUCE and step >= 0:
                reducing[step] += self._seconds(event)
            elif event.name.startswith(self.UPDATE) and step >= 0:
                updating[step] += self._seconds(event)
        if distributed.is_initialized() and distributed.get_world_size() > 1:
            self.all_reduce = reducing
        self.update, self.update_untimed = whole_update(
            updating, "the trace holds no event of the optimizer's step (Optimizer.step#)")
        return [{name: tuple(pair) for name, pair in step.items()} for step in times]


AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def optimizer(rule: networks.Optimizer, parameters, learning_rate: float) -> torch.optim.Optimizer:
    """The network's optimizer in PyTorch; its RMSprop adds epsilon after the square root."""
    if rule.kind == "rmsprop":
        return torch.optim.RMSprop(parameters, lr=learning_rate, alpha=rule.rho, eps=rule.epsilon)
    return torch.optim.SGD(parameters, lr=learning_rate, momentum=rule.momentum)


def memory_format(spec: RunSpec, description: networks.Network) -> torch.memory_format:
    """channels_last (NHWC in memory) where it is faster: on CPUs, where oneDNN's convolutions prefer
    it (benchmarks/memory_format.py here: ResNet50 1.12x, LeNet 1.56x in fp32, 1.13x and 1.88x in
    bf16; compiled, even), and on GPUs where tensor cores run the convolutions (tf32, mixed
    precision, compiled), as PyTorch's performance guide recommends. fp32 on a GPU keeps NCHW.
    Sequences have no channels to put last."""
    if len(description.input_shape) != 3:
        return torch.contiguous_format
    tensor_cores = spec.precision != "fp32" or spec.compile
    return torch.channels_last if spec.gpus == 0 or tensor_cores else torch.contiguous_format


class Harness:
    INFERENCE_IDIOM = "model.eval() called under torch.inference_mode()"

    def __init__(self, spec: RunSpec, description: networks.Network):
        # Processes of one run on one machine share its threads (torchrun sets LOCAL_WORLD_SIZE).
        torch.set_num_threads(max(1, spec.threads // int(os.environ.get("LOCAL_WORLD_SIZE", "1"))))
        torch.manual_seed(spec.seed)
        rank, world = _process_group(spec)
        self.devices = _devices(spec)
        set_tf32(spec.precision)
        if self.devices[0].type == "cuda":
            torch.backends.cudnn.benchmark = True  # as the reference training scripts do
        layout = memory_format(spec, description)  # the batches' too
        named = networks.Named(TorchBuilder())  # its layers by their description names, for profiles
        model = networks.build(description, named).to(self.devices[0], memory_format=layout)
        self.layers = named.leaves
        if world > 1:
            # Data parallelism over processes: each trains on its slice, gradients are all-reduced.
            model = DistributedDataParallel(model, device_ids=[self.devices[0].index] if spec.gpus else None)
            print(f"rank {rank} of {world}: {self.devices[0]}, batch {spec.batch_size_global // world}, "
                  f"{distributed.get_backend()}", flush=True)
            hosts = [None] * world  # each rank's, in rank order
            distributed.all_gather_object(hosts, socket.gethostname())
            self.data_parallel = (f"DistributedDataParallel over {world} processes on {', '.join(hosts)}: gradients "
                                  f"all-reduced by {distributed.get_backend()}")
        elif len(self.devices) > 1:
            # Single-process data parallelism: the global batch is split over the GPUs.
            model = nn.DataParallel(model, device_ids=[d.index for d in self.devices])
            self.data_parallel = (f"nn.DataParallel over {len(self.devices)} GPUs in one process: the batch scattered, "
                                  "gradients summed on the first")
        self.model = model.train()
        self.forward = torch.compile(model) if spec.compile else model  # compiles in the first (warm-up) steps
        self.optimizer = optimizer(networks.optimizer(spec.network), model.parameters(), spec.learning_rate)
        self.criterion = nn.CrossEntropyLoss()
        device_type = self.devices[0].type
        # Weights stay fp32; autocast runs each op in the dtype PyTorch lists for it (the loss in fp32).
        self.autocast = torch.autocast(device_type, dtype=AUTOCAST_DTYPES.get(spec.precision),
                                       enabled=spec.precision in AUTOCAST_DTYPES)
        self.scaler = torch.amp.GradScaler(device_type, enabled=spec.precision == "fp16")
        self.batches = Batches(spec, description, self.devices[0], rank, world)
        self.next_batch = InputClock(self.batches.next)
        print(f"memory format: {layout}", flush=True)
        self.loss = None

    def step(self):
        images, labels = self.next_batch()
        with self.autocast:
            loss = self.criterion(self.forward(images), labels)
        self.optimizer.zero_grad(set_to_none=True)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.loss = loss.detach()
        return self._dispatched()

    def _dispatched(self):
        """How to wait for the work just queued: at once on a CPU, an event behind it on the GPU (the one
        that holds the parameters)."""
        if self.devices[0].type != "cuda":
            return already_finished
        finished = torch.cuda.Event()
        finished.record(torch.cuda.current_stream(self.devices[0]))
        return finished.synchronize

    def inference(self, batch_size: int):
        images = self.next_batch()[0][:batch_size]
        self.model.eval()

        def forward():
            with torch.inference_mode(), self.autocast:
                self.forward(images)
            return self._dispatched()
        return forward

    def layer_profiler(self) -> LayerProfiler:
        if len(self.devices) > 1:
            raise Unavailable(f"{len(self.devices)} GPUs in one process (nn.DataParallel): its replicas run each "
                              "layer's hooks in threads at once, so a layer's scope holds every device's kernels; "
                              "a profile over several GPUs runs one process each (<n>xgpu1)")
        return LayerProfiler(list(self.layers), self.devices[0].type == "cuda", module_scopes(self.layers))

    def test_logits(self):
        """The first process of a group alone evaluates (tasks.accuracy): with its own module, not through
        DistributedDataParallel, whose forward would wait for the others."""
        self.model.eval()
        model = self.model.module if isinstance(self.model, DistributedDataParallel) else self.forward
        try:
            with torch.inference_mode(), self.autocast:
                for images, labels in self.batches.test():
                    yield model(images).float().cpu().numpy(), labels.numpy()
        finally:
            self.model.train()

    def synchronize(self) -> None:
        for device in self.devices:
            if device.type == "cuda":
                torch.cuda.synchronize(device)

    def final_loss(self) -> float | None:
        """The loss of this process's last step; over several processes, once every rank is seen to hold the same
        weights (the group trained as one: each rank calls it)."""
        if isinstance(self.model, DistributedDataParallel):
            total = float(sum(parameter.detach().double().sum() for parameter in self.model.parameters()))
            sums = [None] * distributed.get_world_size()
            distributed.all_gather_object(sums, total)
            if not all(math.isclose(other, sums[0], rel_tol=1e-6, abs_tol=1e-9) for other in sums):
                raise RuntimeError(f"the ranks ended with different weights (sums {sums}): they did not train as one")
        return None if self.loss is None else float(self.loss)

    def allocator_peak_mib(self) -> float | None:
        return gpu_allocator_peak_mib(self.devices) if self.devices[0].type == "cuda" else None

    def input_wait_seconds(self) -> float:
        return self.next_batch.seconds
