"""Caffe backend (BVLC lineage, through pycaffe): network descriptions become NetParameter messages.

The generated train net reads the Caffe Datum LMDB with Caffe's own ``Data`` layer (its
prefetching reader and transformer) or, in synthetic mode, holds one resident batch in ``Input``
blobs; a ``SolverParameter`` carries the run's learning rate, momentum and iterations. Both are
written as prototxt to a scratch directory, and pycaffe's solver trains one ``step(1)`` per
iteration, so the runner times Caffe like every other backend.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np

os.environ.setdefault("GLOG_minloglevel", "1")  # before caffe starts glog: no per-layer set-up chatter
import caffe
from caffe.proto import caffe_pb2
from google.protobuf import text_format

from .. import networks
from ..spec import RunSpec
from . import Unavailable, already_finished, inputs

CUDA_RUNTIME = re.compile(r"libcudart\.so\.(\d+(?:\.\d+)?)")

PACKAGES = ("numpy", "protobuf")  # their versions go into the run's record
FILLER = caffe_pb2.FillerParameter(type="xavier")  # Caffe's default weight filler is all zeros
FLOOR_POOLING = "ceil_mode" in caffe_pb2.PoolingParameter.DESCRIPTOR.fields_by_name


def framework_version() -> str:
    return caffe.__version__


def cuda_build() -> str | None:
    """The CUDA runtime pycaffe's library loads (a CPU_ONLY build loads none), as ldd lists it."""
    libraries = subprocess.run(["ldd", caffe._caffe.__file__], capture_output=True, text=True, check=False).stdout
    found = CUDA_RUNTIME.search(libraries)
    return found[1] if found else None


class NetWriter:
    """A NetParameter being written: layers appended in order, each named after its type."""

    def __init__(self, name: str):
        self.net = caffe_pb2.NetParameter(name=name)
        self.count = 0

    def add(self, kind: str, bottoms: list[str], in_place: bool = False, **params) -> str:
        self.count += 1
        name = f"{kind.lower()}{self.count}"
        top = bottoms[0] if in_place else name
        layer = self.net.layer.add(name=name, type=kind, bottom=bottoms, top=[top])
        for field, value in params.items():
            if isinstance(value, list):
                getattr(layer, field).extend(value)
            else:
                getattr(layer, field).CopyFrom(value)
        return top


class CaffeBuilder:
    """Each built node is ``emit(writer, bottom, private) -> top``. ``private`` says that nothing
    else reads ``bottom``, so an element-wise layer may overwrite it, as Caffe's own nets do."""

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


def net_parameter(description: networks.Network, data_layers: list[caffe_pb2.LayerParameter],
                  loss: bool) -> caffe_pb2.NetParameter:
    """The network on the ``data`` blob the given layers produce; with ``loss``, a softmax loss on ``label``."""
    writer = NetWriter(f"{description.name}_{description.variant}")
    writer.net.layer.extend(data_layers)
    logits = networks.build(description, CaffeBuilder())(writer, "data", False)
    if loss:
        writer.net.layer.add(name="loss", type="SoftmaxWithLoss", bottom=[logits, "label"], top=["loss"])
    return writer.net


def input_layer(top: str, shape: tuple) -> caffe_pb2.LayerParameter:
    return caffe_pb2.LayerParameter(name=top, type="Input", top=[top], input_param=caffe_pb2.InputParameter(
        shape=[caffe_pb2.BlobShape(dim=list(shape))]))


class Built(NamedTuple):
    net: caffe.Net
    layers: dict  # name -> LayerParameter, for the ParamSpecs


def build(description: networks.Network) -> Built:
    """The network on an ``Input`` blob of one image (the parameter count and shape checks use it)."""
    parameter = net_parameter(description, [input_layer("data", (1, *description.input_shape))], loss=False)
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


def data_layer(spec: RunSpec, description: networks.Network) -> caffe_pb2.LayerParameter:
    """Caffe's LMDB reader with the reference pipelines' transformation (random crop to the input,
    mirror for colour images). Its normalisation is one scale for all channels: 1 / mean std."""
    shards = inputs.train_shards(spec)
    if len(shards) > 1:
        print(f"Caffe's Data layer reads one LMDB: shard {shards[0].name} of {len(shards)}, cycled", flush=True)
    mean, std = inputs.pixel_statistics(spec)
    channels, height, _ = description.input_shape
    return caffe_pb2.LayerParameter(
        name="data", type="Data", top=["data", "label"],
        data_param=caffe_pb2.DataParameter(source=str(shards[0]), backend=caffe_pb2.DataParameter.LMDB,
                                           batch_size=spec.batch_size_global),
        transform_param=caffe_pb2.TransformationParameter(
            mean_value=[float(m) for m in mean], scale=float(1 / std.mean()), crop_size=height,
            mirror=channels == 3))


def _select_device(spec: RunSpec) -> None:
    if spec.gpus == 0:
        caffe.set_mode_cpu()
        return
    if spec.gpus > 1:
        if not hasattr(caffe, "NCCL"):
            raise Unavailable("multi-GPU Caffe: this Caffe's Python interface has no parallel solver (no caffe.NCCL, "
                              "set_solver_count, set_solver_rank)")
        raise Unavailable("multi-GPU Caffe (pycaffe's caffe.NCCL, one process per GPU) is not wired into the runner")
    # A CPU_ONLY Caffe aborts the process (glog FATAL) on first GPU use: ask a child process first.
    probe = subprocess.run([sys.executable, "-c", "import caffe; caffe.set_device(0)"], check=False,
                           capture_output=True)
    if probe.returncode != 0:
        raise Unavailable("this Caffe has no CUDA support (a CPU_ONLY build)")
    caffe.set_device(0)
    caffe.set_mode_gpu()


class Trainer:
    def __init__(self, spec: RunSpec, description: networks.Network):
        _select_device(spec)
        caffe.set_random_seed(spec.seed)
        self.scratch = tempfile.TemporaryDirectory(prefix="dlbench-caffe-")
        directory = Path(self.scratch.name)
        batch = (spec.batch_size_global, *description.input_shape)
        if spec.data_mode == "synthetic":
            data_layers = [input_layer("data", batch), input_layer("label", batch[:1])]
        else:
            data_layers = [data_layer(spec, description)]
        net_path = directory / "train.prototxt"
        net_path.write_text(text_format.MessageToString(net_parameter(description, data_layers, loss=True)))
        solver_path = directory / "solver.prototxt"
        solver_path.write_text(text_format.MessageToString(caffe_pb2.SolverParameter(
            train_net=str(net_path), type="SGD", base_lr=spec.learning_rate, momentum=0.9, lr_policy="fixed",
            max_iter=spec.iterations, display=0, snapshot_after_train=False, random_seed=spec.seed,
            solver_mode=caffe_pb2.SolverParameter.GPU if spec.gpus else caffe_pb2.SolverParameter.CPU)))
        self.solver = caffe.get_solver(str(solver_path))
        if spec.data_mode == "synthetic":
            net = self.solver.net
            net.blobs["data"].data[...], net.blobs["label"].data[...] = inputs.normalised_synthetic_batch(
                spec, description)  # Input layers leave their blobs as set: a resident batch
        self.steps = 0

    def step(self):
        self.solver.step(1)
        self.steps += 1
        return already_finished  # the solver reads the loss back to the host at the end of each step

    def synchronize(self) -> None:
        pass  # every step finished before it returned

    def final_loss(self) -> float | None:
        return float(self.solver.net.blobs["loss"].data) if self.steps else None

    def allocator_peak_mib(self) -> None:
        return None  # Caffe keeps no allocator statistics

    def input_wait_seconds(self) -> None:
        return None  # the solver's step runs the Data layer, whose wait pycaffe does not time
