"""Caffe backend (BVLC lineage, through pycaffe): network descriptions become NetParameter messages.

The generated train net reads the Caffe Datum LMDB with Caffe's own ``Data`` layer (its
prefetching reader and transformer) or, in synthetic mode, holds one resident batch in ``Input``
blobs; a ``SolverParameter`` carries the run's learning rate, momentum and iterations. Both are
written as prototxt to a scratch directory, and pycaffe's solver trains one ``step(1)`` per
iteration, so the runner times Caffe like every other backend.
"""
from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple, Self

import numpy as np

from ..envs import cuda_wheels

os.environ.setdefault("GLOG_minloglevel", "1")  # before caffe starts glog: no per-layer set-up chatter
# before Caffe loads: its CUDA build links CUDA 13's libraries by name
CUDA_LIBRARIES = cuda_wheels.preload(cuda_wheels.PRELOADED["caffe"])
import caffe
from caffe.proto import caffe_pb2
from google.protobuf import text_format

from .. import networks
from ..envs.caffe_build import TOOL
from ..formats import CONVERTED_RECORD
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import GpuCode, Unavailable, inputs

CUDA_RUNTIME = re.compile(r"libcudart\.so\.(\d+(?:\.\d+)?)")
GLOG_FATAL = re.compile(r"^F\d{4,8} [\d:.]+ +\d+ \S+\] ")  # F1126 01:02:03.456789  4242 common.cpp:148] Check failed

PACKAGES = ("numpy", "protobuf")  # their versions go into the run's record
# networks.INITIALISATION (Caffe's default weight filler is all zeros, its xavier's variance over fan-in)
FILLER = caffe_pb2.FillerParameter(type="xavier", variance_norm=caffe_pb2.FillerParameter.AVERAGE)
FLOOR_POOLING = "ceil_mode" in caffe_pb2.PoolingParameter.DESCRIPTOR.fields_by_name


def framework_version() -> str:
    return caffe.__version__


def cuda_build() -> str | None:
    """The CUDA runtime pycaffe's library loads (a CPU_ONLY build loads none), as ldd lists it; built without
    cuDNN (dlbench.envs.caffe_build)."""
    libraries = subprocess.run(["ldd", caffe._caffe.__file__], capture_output=True, text=True, check=False).stdout
    found = CUDA_RUNTIME.search(libraries)
    return f"{found[1]} (no cuDNN)" if found else None


def gpu_code() -> GpuCode:
    """The GPU code in ``libcaffe.so``'s fatbinary (Caffe does not report what it was compiled for) and the run's
    GPUs as NVML lists them (envs/caffe.cuda.requirements.txt has pyelftools and nvidia-ml-py)."""
    from ..envs import elf
    from ..hardware import gpu

    library = next(Path(caffe.__file__).parent.glob("libcaffe.so.*"))  # beside _caffe.so (dlbench.envs.caffe_build)
    return GpuCode.from_arch_names(f"Caffe {caffe.__version__}", cuda_build(), elf.fatbin_architectures(library),
                                   gpu.visible_gpus())


class NetWriter:
    """A NetParameter being written for batches of ``batch``: layers appended in order, each named after its
    type; ``described`` says which description layer (networks.Named) each of them is part of."""

    def __init__(self, name: str, batch: int):
        self.net = caffe_pb2.NetParameter(name=name)
        self.batch = batch
        self.count = 0
        self.described: dict[str, str] = {}

    def add(self, kind: str, bottoms: list[str], in_place: bool = False, tops: int = 1, **params) -> str | list[str]:
        """The layer's top, or its ``tops`` tops."""
        self.count += 1
        name = f"{kind.lower()}{self.count}"
        names = [bottoms[0] if in_place else name] if tops == 1 else [f"{name}_{index}" for index in range(tops)]
        layer = self.net.layer.add(name=name, type=kind, bottom=bottoms, top=names)
        for field, value in params.items():
            if isinstance(value, list):
                getattr(layer, field).extend(value)
            else:
                getattr(layer, field).CopyFrom(value)
        return names[0] if tops == 1 else names


def _constant(value: float) -> caffe_pb2.FillerParameter:
    return caffe_pb2.FillerParameter(type="constant", value=value)


class CaffeBuilder:
    """Each built node is ``emit(writer, bottom, private) -> top``. ``private`` says that nothing
    else reads ``bottom``, so an element-wise layer may overwrite it, as Caffe's own nets do."""

    def name_leaf(self, emit, name: str):
        """The description layer's Caffe layers (a batch norm is two, an LSTM several) recorded as its."""
        def named(writer: NetWriter, bottom, private):
            first = len(writer.net.layer)
            top = emit(writer, bottom, private)
            writer.described.update((layer.name, name) for layer in writer.net.layer[first:])
            return top
        return named

    def conv(self, layer, shape):
        param = caffe_pb2.ConvolutionParameter(num_output=layer.out_channels, kernel_size=[layer.kernel],
                                               stride=[layer.stride], pad=[layer.padding],
                                               bias_term=layer.bias, weight_filler=FILLER)
        return lambda writer, bottom, private: writer.add("Convolution", [bottom], convolution_param=param)

    def batchnorm(self, layer, shape):
        frozen = caffe_pb2.ParamSpec(lr_mult=0, decay_mult=0)  # running mean, variance, their scale factor

        def emit(writer, bottom, private):
            top = writer.add("BatchNorm", [bottom], in_place=private, param=[frozen] * 3,
                             batch_norm_param=caffe_pb2.BatchNormParameter(eps=layer.eps))
            # Caffe's BatchNorm only normalises; the trainable scale and shift are a Scale layer.
            return writer.add("Scale", [top], in_place=True, scale_param=caffe_pb2.ScaleParameter(bias_term=True))
        return emit

    def relu(self, layer, shape):
        return lambda writer, bottom, private: writer.add("ReLU", [bottom], in_place=private)

    def maxpool(self, layer, shape):
        param = caffe_pb2.PoolingParameter(pool=caffe_pb2.PoolingParameter.MAX, kernel_size=layer.kernel,
                                           stride=layer.stride, pad=layer.padding)
        rounding_matters = any(
            networks.window_output_size(size, layer.kernel, layer.stride, layer.padding, ceil_mode=True)
            != networks.window_output_size(size, layer.kernel, layer.stride, layer.padding) for size in shape[1:])
        if not layer.ceil_mode and rounding_matters:
            if not FLOOR_POOLING:
                raise Unavailable(f"this Caffe rounds pooled sizes up only (PoolingParameter has no ceil_mode); "
                                  f"{layer} on {shape} needs floor rounding")
            param.ceil_mode = False
        return lambda writer, bottom, private: writer.add("Pooling", [bottom], pooling_param=param)

    def globalavgpool(self, layer, shape):
        param = caffe_pb2.PoolingParameter(pool=caffe_pb2.PoolingParameter.AVE, global_pooling=True)
        return lambda writer, bottom, private: writer.add("Pooling", [bottom], pooling_param=param)

    def flatten(self, layer, shape):
        return lambda writer, bottom, private: writer.add("Flatten", [bottom])

    def dense(self, layer, shape):
        param = caffe_pb2.InnerProductParameter(num_output=layer.out_features, bias_term=layer.bias,
                                                weight_filler=FILLER)
        return lambda writer, bottom, private: writer.add("InnerProduct", [bottom], inner_product_param=param)

    def dropout(self, layer, shape):
        param = caffe_pb2.DropoutParameter(dropout_ratio=layer.rate)
        return lambda writer, bottom, private: writer.add("Dropout", [bottom], in_place=private, dropout_param=param)

    def lstm(self, layer, shape):
        steps, features = shape

        def emit(writer, bottom, private):
            # Caffe's LSTM reads time-major blobs (steps, batch, features) and sequence-continuation flags
            # (0 where a sequence starts, else Caffe carries the state over from the previous batch).
            # BVLC Caffe has no transpose: the batch-major blob is sliced into its steps, stacked, reshaped.
            step_tops = writer.add("Slice", [bottom], tops=steps, slice_param=caffe_pb2.SliceParameter(axis=1))
            stacked = writer.add("Concat", step_tops, concat_param=caffe_pb2.ConcatParameter(axis=0))
            time_major = writer.add("Reshape", [stacked], reshape_param=caffe_pb2.ReshapeParameter(
                shape=caffe_pb2.BlobShape(dim=[steps, -1, features])))
            flags = writer.add("DummyData", [], tops=2, dummy_data_param=caffe_pb2.DummyDataParameter(
                shape=[caffe_pb2.BlobShape(dim=[1, writer.batch]), caffe_pb2.BlobShape(dim=[steps - 1, writer.batch])],
                data_filler=[_constant(0), _constant(1)]))
            starts = writer.add("Concat", flags, concat_param=caffe_pb2.ConcatParameter(axis=0))
            outputs = writer.add("LSTM", [time_major, starts], recurrent_param=caffe_pb2.RecurrentParameter(
                num_output=layer.units, weight_filler=FILLER, bias_filler=_constant(0)))
            earlier, last = writer.add("Slice", [outputs], tops=2, slice_param=caffe_pb2.SliceParameter(
                axis=0, slice_point=[steps - 1]))
            writer.add("Silence", [earlier], tops=0)
            return writer.add("Reshape", [last], reshape_param=caffe_pb2.ReshapeParameter(
                shape=caffe_pb2.BlobShape(dim=[-1, layer.units])))
        return emit

    def sequential(self, children):
        def emit(writer, bottom, private):
            for child in children:
                bottom, private = child(writer, bottom, private), True  # a child's output is its successor's alone
            return bottom
        return emit

    def concat(self, branches):
        def emit(writer, bottom, private):
            tops = [branch(writer, bottom, False) for branch in branches]
            return writer.add("Concat", tops, concat_param=caffe_pb2.ConcatParameter(axis=1))
        return emit

    def residual(self, body, shortcut):
        def emit(writer, bottom, private):
            tops = [body(writer, bottom, False), bottom if shortcut is None else shortcut(writer, bottom, False)]
            return writer.add("Eltwise", tops, eltwise_param=caffe_pb2.EltwiseParameter(
                operation=caffe_pb2.EltwiseParameter.SUM))
        return emit


def net_parameter(description: networks.Network, pipeline: list[caffe_pb2.LayerParameter], batch: int,
                  loss: bool) -> tuple[caffe_pb2.NetParameter, dict[str, str]]:
    """The network on the ``data`` blob of ``batch`` the given layers produce; with ``loss``, a softmax loss
    on ``label``. And which description layer each Caffe layer is part of."""
    writer = NetWriter(f"{description.name}_{description.sized_for}", batch)
    writer.net.layer.extend(pipeline)
    logits = networks.build(description, networks.Named(CaffeBuilder()))(writer, "data", False)
    if loss:
        writer.net.layer.add(name="loss", type="SoftmaxWithLoss", bottom=[logits, "label"], top=["loss"])
    return writer.net, writer.described


def input_layer(top: str, shape: tuple) -> caffe_pb2.LayerParameter:
    return caffe_pb2.LayerParameter(name=top, type="Input", top=[top], input_param=caffe_pb2.InputParameter(
        shape=[caffe_pb2.BlobShape(dim=list(shape))]))


class Built(NamedTuple):
    net: caffe.Net
    layers: dict  # name -> LayerParameter, for the ParamSpecs


def build(description: networks.Network) -> Built:
    """The network on an ``Input`` blob of one image (the parameter count and shape checks use it)."""
    parameter, _ = net_parameter(description, [input_layer("data", (1, *description.input_shape))], 1, loss=False)
    with tempfile.TemporaryDirectory(prefix="dlbench-caffe-") as scratch:
        path = Path(scratch, "net.prototxt")
        path.write_text(text_format.MessageToString(parameter))
        net = caffe.Net(str(path), caffe.TRAIN)
    return Built(net, {layer.name: layer for layer in parameter.layer})


def trainable_parameters(model: Built) -> int:
    """Blobs the solver updates: all but those whose ParamSpec sets lr_mult 0 (BatchNorm statistics)."""
    total = 0
    for name, blobs in model.net.params.items():
        specs = model.layers[name].param
        total += sum(blob.data.size for index, blob in enumerate(blobs)
                     if index >= len(specs) or specs[index].lr_mult != 0)
    return total


def forward_shape(model: Built, images: np.ndarray) -> tuple:
    model.net.blobs["data"].reshape(*images.shape)
    model.net.blobs["data"].data[...] = images
    return model.net.forward()[model.net.outputs[0]].shape


def data_layers(spec: RunSpec, description: networks.Network, shard: Path, train: bool,
                batch: int | None = None) -> list[caffe_pb2.LayerParameter]:
    """Caffe's LMDB reader with the reference pipelines' transformation: for training a random crop to the
    stored shape and a random mirror of colour images; for testing the centre crop (Caffe's phase) and no
    mirror (which Caffe's transformer does in either phase). Its normalisation is one scale for all channels:
    1 / mean std. A case's ``input_size``: then resized (:func:`resizing_layers`). Batches of the case's
    size, or of ``batch`` (a GPU's share, where each GPU runs a solver of its own)."""
    mean, std = inputs.pixel_statistics(spec)
    stored = inputs.stored_shape(spec, description)
    channels, height, _ = stored
    reader = caffe_pb2.LayerParameter(
        name="data", type="Data", top=["stored" if stored != description.input_shape else "data", "label"],
        data_param=caffe_pb2.DataParameter(source=str(shard), backend=caffe_pb2.DataParameter.LMDB,
                                           batch_size=batch or spec.batch_size_global),
        transform_param=caffe_pb2.TransformationParameter(
            mean_value=[float(m) for m in mean], scale=float(1 / std.mean()), crop_size=height,
            mirror=train and channels == 3))
    if stored == description.input_shape:
        return [reader]
    return [reader, *resizing_layers("stored", stored, description.input_shape)]


def resizing_layers(bottom: str, stored: tuple, shape: tuple) -> list[caffe_pb2.LayerParameter]:
    """The normalised images of ``bottom`` resized to ``shape`` (bilinear, half-pixel centres, edges clamped:
    PyTorch's interpolate, TensorFlow's resize) and grey made RGB, on the ``data`` blob, in BVLC Caffe's own
    layers, frozen: its upsampling idiom (a Deconvolution of the bilinear filler, stride the integer factor),
    which near the edges weighs pixels beyond them as zero, then divided by the weight that fell inside the
    image (a ones image upsampled the same way; 1 but within half a factor of an edge), which leaves there
    the nearest pixel alone, as a clamped edge does."""
    (channels, height, width), (out_channels, out_height, out_width) = stored, shape
    factor = out_height // height
    if (height * factor, width * factor) != (out_height, out_width) or channels not in (1, out_channels):
        raise Unavailable(f"Caffe resizes {stored} to {shape}: its bilinear upsampling needs one integer factor "
                          "and grey or the same channels")
    frozen = caffe_pb2.ParamSpec(lr_mult=0, decay_mult=0)

    def upsampled(name: str, source: str, inputs: int, outputs: int) -> caffe_pb2.LayerParameter:
        return caffe_pb2.LayerParameter(
            name=name, type="Deconvolution", bottom=[source], top=[name], param=[frozen],
            convolution_param=caffe_pb2.ConvolutionParameter(
                num_output=outputs, group=inputs if inputs == outputs else 1, bias_term=False,
                kernel_size=[2 * factor - factor % 2], stride=[factor], pad=[factor // 2],
                weight_filler=caffe_pb2.FillerParameter(type="bilinear")))
    return [
        upsampled("resized", bottom, channels, out_channels),
        caffe_pb2.LayerParameter(name="resize_ones", type="DummyData", top=["resize_ones"],
                                 dummy_data_param=caffe_pb2.DummyDataParameter(
                                     shape=[caffe_pb2.BlobShape(dim=[1, 1, height, width])],
                                     data_filler=[_constant(1)])),
        upsampled("resize_inside", "resize_ones", 1, 1),
        caffe_pb2.LayerParameter(name="resize_divisor", type="Power", bottom=["resize_inside"],
                                 top=["resize_divisor"], power_param=caffe_pb2.PowerParameter(power=-1)),
        caffe_pb2.LayerParameter(name="resize_map", type="Reshape", bottom=["resize_divisor"], top=["resize_map"],
                                 reshape_param=caffe_pb2.ReshapeParameter(
                                     shape=caffe_pb2.BlobShape(dim=[out_height, out_width]))),
        caffe_pb2.LayerParameter(name="resize", type="Scale", bottom=["resized", "resize_map"], top=["data"],
                                 scale_param=caffe_pb2.ScaleParameter(axis=2)),
    ]


def solver_rule(rule: networks.Optimizer) -> dict:
    """The network's optimizer as SolverParameter fields; Caffe's RMSProp adds delta after the square root."""
    if rule.kind == "rmsprop":
        return {"type": "RMSProp", "rms_decay": rule.rho, "delta": rule.epsilon}
    return {"type": "SGD", "momentum": rule.momentum}


def _select_device(spec: RunSpec) -> None:
    if spec.gpus == 0:
        caffe.set_mode_cpu()
        return
    # A CPU_ONLY Caffe aborts the process (glog FATAL) on first GPU use, as does a CUDA one without a usable GPU:
    # ask a child process first.
    code = cuda_wheels.preloading("import caffe; caffe.set_device(0)", CUDA_LIBRARIES)
    probe = subprocess.run([sys.executable, *code], check=False, capture_output=True, text=True)
    if probe.returncode != 0:
        if cuda_build() is None:
            raise Unavailable("this Caffe has no CUDA support (a CPU_ONLY build)")
        lines = probe.stderr.strip().splitlines() or ["no output"]
        fatal = next((line.split("] ", 1)[1] for line in lines if GLOG_FATAL.match(line)), lines[-1])
        raise Unavailable(f"Caffe cannot use GPU 0: {fatal}")
    if spec.gpus > 1:
        if spec.data_mode == "synthetic":
            raise Unavailable("multi-GPU Caffe trains in `caffe train`, whose solvers read their batches through a "
                              "data layer: the resident synthetic batch (pycaffe's Input blobs) cannot be given to it")
        if spec.batch_size_global % spec.gpus:
            raise Unavailable(f"multi-GPU Caffe: each GPU's solver takes an equal share of the batch; "
                              f"{spec.batch_size_global} images do not split over {spec.gpus} GPUs")
        return  # the GPUs are caffe train's
    caffe.set_device(0)
    caffe.set_mode_gpu()


class TrainTool:
    """Caffe's own training loop, ``caffe train``, in a child process: as the thesis ran Caffe on two GPUs
    (``--gpu 0,1``: a solver per GPU on batches of the prototxt's size, their gradients summed over a tree of
    peer-to-peer copies, the library's P2PSync). With ``display: 1`` it logs a line for each iteration after
    the iteration's forward and backward pass: :meth:`next_iteration` waits for the next."""

    ITERATION = re.compile(r"\] Iteration (\d+), loss = (\S+)")
    SOLVING = "] Solving "  # logged as the solver starts its iterations, the nets set up

    PACKAGE = Path(caffe.__file__).parent  # the tool beside libcaffe.so (dlbench.envs.caffe_build)

    @classmethod
    def command_for(cls, solver: Path, gpus: int) -> list[str]:
        devices = [f"--gpu={','.join(str(index) for index in range(gpus))}"] if gpus else []
        return [str(cls.PACKAGE / TOOL), "train", f"--solver={solver}", *devices]

    def __init__(self, solver: Path, gpus: int):
        self.command = self.command_for(solver, gpus)
        libraries = [str(self.PACKAGE), *dict.fromkeys(str(path.parent) for path in CUDA_LIBRARIES),
                     *filter(None, [os.environ.get("LD_LIBRARY_PATH")])]
        logging = {"GLOG_minloglevel": "0", "GLOG_logtostderr": "1"}  # its INFO lines, to its stderr
        self.process = subprocess.Popen(
            self.command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **logging, "LD_LIBRARY_PATH": ":".join(libraries)})
        self.said: collections.deque[str] = collections.deque(maxlen=20)  # for the reason, if it fails
        self.loss: float | None = None
        self._read_until(lambda line: self.SOLVING in line)

    def _read_until(self, found) -> str:
        for line in self.process.stderr:
            self.said.append(line.rstrip())
            if found(line):
                return line
        code = self.process.wait()
        fatal = next((line.split("] ", 1)[1] for line in self.said if GLOG_FATAL.match(line)),
                     self.said[-1] if self.said else "no output")
        raise RuntimeError(f"caffe train ended ({code}): {fatal}")

    def next_iteration(self) -> None:
        self.loss = float(self.ITERATION.search(self._read_until(self.ITERATION.search))[2])

    def close(self) -> None:
        """Stop it: after its last iteration it would pass the net forward once more, only to log the loss."""
        if self.process.poll() is None:
            self.process.terminate()
        self.process.wait()
        self.process.stderr.close()


class LayerProfiler:
    """``caffe time``'s per-layer timing, through pycaffe: while it is on, a step is the solver's net run
    forward one Caffe layer at a time, then backward one at a time, each timed on the host clock, and no
    update (pycaffe cannot apply one apart from a whole solver step). A Caffe layer counts for the
    description layer it was built for; the Data and loss layers for none."""

    METHOD = ("caffe time's per-layer forward and backward (Net::ForwardFromTo, BackwardFromTo one layer at a time "
              "through pycaffe, host clock), mapped to the description's layers; a profiled step makes no update")
    devices = all_reduce = layer_updates = update = None  # it profiles one device, and no update
    update_untimed = "a profiled step makes no update (caffe time's way: pycaffe applies none apart from a solver step)"

    def __init__(self, harness: Harness, layers: list[str]):
        self.harness, self.layers, self.steps = harness, layers, []

    def __enter__(self) -> Self:
        self.harness.profiler = self
        return self

    def __exit__(self, *exception) -> None:
        self.harness.profiler = None

    def step(self, net: caffe.Net) -> None:
        times = {name: [0.0, 0.0] for name in self.layers}
        described = [self.harness.described.get(name) for name in net._layer_names]
        net.clear_param_diffs()
        for phase, order in ((0, range(len(described))), (1, reversed(range(len(described))))):
            for index in order:
                start = time.perf_counter()
                (net._forward if phase == 0 else net._backward)(index, index)
                if described[index]:
                    times[described[index]][phase] += time.perf_counter() - start
        self.steps.append({name: tuple(pair) for name, pair in times.items()})


class Harness:
    """pycaffe's solver, one ``step(1)`` per training step; over several GPUs (or with ``train_tool``: tests, on
    the CPU) Caffe's own ``caffe train`` (:class:`TrainTool`), whose iterations the steps follow."""

    INFERENCE_IDIOM = "net.forward() of a TEST-phase net sharing the solver's weights"

    def __init__(self, spec: RunSpec, description: networks.Network, train_tool: bool = False):
        _select_device(spec)
        caffe.set_random_seed(spec.seed)
        self.scratch = tempfile.TemporaryDirectory(prefix="dlbench-caffe-")
        directory = Path(self.scratch.name)
        tool = train_tool or spec.gpus > 1
        batch = spec.batch_size_global // max(spec.gpus, 1) if tool else spec.batch_size_global  # each solver's
        if spec.data_mode == "synthetic":
            shape = (batch, *description.input_shape)
            pipeline = [input_layer("data", shape), input_layer("label", shape[:1])]
        else:
            shards = inputs.train_shards(spec)
            if len(shards) > 1:
                print(f"Caffe's Data layer reads one LMDB: shard {shards[0].name} of {len(shards)}, cycled", flush=True)
            pipeline = data_layers(spec, description, shards[0], train=True, batch=batch)
        net_path = directory / "train.prototxt"
        parameter, self.described = net_parameter(description, pipeline, batch, loss=True)
        self.pipeline_end = pipeline[-1].name  # the layer whose top the network reads (resized, if the case asks)
        net_path.write_text(text_format.MessageToString(parameter))
        solver_path = directory / "solver.prototxt"
        solver_path.write_text(text_format.MessageToString(caffe_pb2.SolverParameter(
            train_net=str(net_path), base_lr=spec.learning_rate, lr_policy="fixed",
            **solver_rule(networks.optimizer(spec.network)),
            max_iter=spec.iterations, display=int(tool), snapshot_after_train=False, random_seed=spec.seed,
            solver_mode=caffe_pb2.SolverParameter.GPU if spec.gpus else caffe_pb2.SolverParameter.CPU)))
        self.spec, self.description, self.directory = spec, description, directory
        self.profiler: LayerProfiler | None = None
        self.steps = 0
        self.tool = TrainTool(solver_path, spec.gpus) if tool else None
        if spec.gpus > 1:
            self.data_parallel = (f"caffe train --gpu: a solver per GPU on batches of {batch}, gradients summed over "
                                  "peer-to-peer copies (Caffe 1.0.0-rc3's P2PSync)")
        if self.tool:
            print(f"caffe train over {max(spec.gpus, 1)} {'GPUs' if spec.gpus else 'CPU'}, batch {batch} each: "
                  f"{' '.join(self.tool.command)}", flush=True)
            return
        self.solver = caffe.get_solver(str(solver_path))
        if spec.data_mode == "synthetic":
            net = self.solver.net
            net.blobs["data"].data[...], net.blobs["label"].data[...] = inputs.normalised_synthetic_batch(
                spec, description)  # Input layers leave their blobs as set: a resident batch

    def step(self):
        self.steps += 1
        if self.tool:
            return self.tool.next_iteration  # the tool runs its iterations on: the loop waits for each
        if self.profiler:
            self.profiler.step(self.solver.net)
        else:
            self.solver.step(1)
        return already_finished  # the solver reads the loss back to the host at the end of each step

    def _in_process(self, task: str) -> None:
        if self.tool:
            raise Unavailable(f"{task} of multi-GPU Caffe: its training runs in caffe train, whose nets pycaffe "
                              "cannot reach")

    def layer_profiler(self) -> LayerProfiler:
        self._in_process("a profile")
        if self.spec.gpus:  # caffe time's CUDA-event timer is not in pycaffe; the host clock cannot wait for a layer
            raise Unavailable("Caffe's per-layer profile on a GPU: pycaffe exposes no way to wait for one layer's "
                              "kernels (caffe time's CUDA-event timer); CPU runs only")
        return LayerProfiler(self, networks.layer_names(self.description))

    def test_net(self) -> tuple[caffe.Net, str, int]:
        """A TEST-phase net on the test split's LMDB sharing the solver's weights, its logits' blob, and the
        split's image count."""
        self._in_process("the accuracy")
        shards = inputs.test_shards(self.spec)
        if len(shards) > 1:
            raise Unavailable(f"Caffe's Data layer reads one LMDB; this test split has {len(shards)} shards")
        images = json.loads((Path(self.spec.data_dir) / CONVERTED_RECORD).read_text())["splits"]["test"]["images"]
        parameter, _ = net_parameter(self.description, data_layers(self.spec, self.description, shards[0], train=False),
                                     self.spec.batch_size_global, loss=False)
        path = self.directory / "test.prototxt"
        path.write_text(text_format.MessageToString(parameter))
        net = caffe.Net(str(path), caffe.TEST)
        net.share_with(self.solver.net)
        return net, parameter.layer[-1].top[0], images

    def test_logits(self):
        """The test split once: Caffe's Data layer cycles its LMDB, so the last batch's images taken again
        from the start are left out."""
        net, logits, images = self.test_net()
        for start in range(0, images, self.spec.batch_size_global):
            kept = min(self.spec.batch_size_global, images - start)
            net.forward()
            yield net.blobs[logits].data[:kept].copy(), net.blobs["label"].data[:kept].astype(np.int64)

    def inference(self, batch_size: int):
        self._in_process("inference")
        train_net = self.solver.net
        train_net.forward(end=self.pipeline_end)  # the Data layer's next batch (Input layers: the resident one)
        path = self.directory / f"inference-{batch_size}.prototxt"
        data = input_layer("data", (batch_size, *self.description.input_shape))
        parameter, _ = net_parameter(self.description, [data], batch_size, loss=False)
        path.write_text(text_format.MessageToString(parameter))
        net = caffe.Net(str(path), caffe.TEST)  # dropout off, batch norm on its running statistics
        net.share_with(train_net)  # layers of the same names: the weights the solver holds
        net.blobs["data"].data[...] = train_net.blobs["data"].data[:batch_size]

        def forward():
            net.forward()  # returns the output blob read back to the host
            return already_finished
        return forward

    def synchronize(self) -> None:
        pass  # every step finished before it returned

    def final_loss(self) -> float | None:
        if self.tool:
            return self.tool.loss
        return float(self.solver.net.blobs["loss"].data) if self.steps else None

    def close(self) -> None:
        if self.tool:
            self.tool.close()
        self.scratch.cleanup()

    def allocator_peak_mib(self) -> None:
        return None  # Caffe keeps no allocator statistics

    def input_wait_seconds(self) -> None:
        return None  # the solver's step runs the Data layer, whose wait pycaffe does not time
