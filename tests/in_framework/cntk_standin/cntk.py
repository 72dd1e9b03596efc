"""A stand-in for the part of CNTK 2.7's Python API that the CNTK worker calls, for the tests of the runner's
protocol with its worker and of its failure paths (what the real CNTK computes is tested with the real CNTK,
tests/unit/backends/test_cntk.py). It is no CNTK: it tracks shapes and
parameters by CNTK's rules (ConvolveGeometry: automatic padding gives one output per stride-th
input position; without it, the windows inside the input, rounded down unless ceil_out_dim; a
kernel larger than its input is refused, padded or not, as CNTK 2.7 does), reads the map and mean files as
CNTK's ImageDeserializer would find them, and
"trains" by sleeping (CNTK_STANDIN_STEP_S seconds a step, 2 ms unless set). Set
CNTK_STANDIN_EXIT_AT_STEP to make the worker die at that step.
"""
import math
import os
import sys
import time
import types
from pathlib import Path

import numpy as np

__version__ = "2.7-standin"
MAX_POOLING = "max"
INFINITELY_REPEAT = sys.maxsize


class Variable:
    def __init__(self, shape, *inputs, new=()):
        self.shape = tuple(shape)
        found = [p for source in inputs for p in getattr(source, "parameters", [])] + list(new)
        self.parameters = list({id(p): p for p in found}.values())  # a graph's branches share their inputs'

    def eval(self, arguments):
        """Logits of zeros for each image of the batch: every image is predicted class 0."""
        (value,) = arguments.values()
        return np.zeros((value.shape[0], *self.shape), np.float32)


class Parameter:
    def __init__(self, *shape):
        self.shape = shape
        self.value = np.zeros(shape, np.float32)


def input_variable(shape, dtype=None):
    return Variable(shape if isinstance(shape, tuple) else (shape,))


def constant(value):
    return Variable(np.shape(value))


def element_times(x, y):
    return Variable(np.broadcast_shapes(x.shape, y.shape), x, y)


def relu(x):
    return Variable(x.shape, x)


def plus(x, y):
    assert x.shape == y.shape, (x.shape, y.shape)
    return Variable(x.shape, x, y)


def splice(*xs, axis=0):
    assert axis == 0 and len({x.shape[1:] for x in xs}) == 1, [x.shape for x in xs]
    return Variable((sum(x.shape[0] for x in xs), *xs[0].shape[1:]), *xs)


def pad(x, pattern):
    return Variable([n + low + high for n, (low, high) in zip(x.shape, pattern)], x)


def reshape(x, shape):
    assert shape == (-1,)
    return Variable((math.prod(x.shape),), x)


def _window(size, kernel, stride, autopad, ceil_out_dim=False):
    assert kernel <= size, f"Convolution operation requires that kernel dim {kernel} <= input dim {size}."
    if autopad:
        return math.ceil(size / stride)
    return (math.ceil if ceil_out_dim else math.floor)((size - kernel) / stride) + 1


def pooling(x, kind, window, strides, auto_padding, ceil_out_dim=False):
    spatial = [_window(n, k, s, auto_padding[0], ceil_out_dim) for n, k, s in zip(x.shape[1:], window, strides)]
    return Variable((x.shape[0], *spatial), x)


def glorot_uniform():
    return "glorot_uniform"


def cross_entropy_with_softmax(z, labels):
    assert z.shape == labels.shape, (z.shape, labels.shape)
    return Variable((), z, labels)


def learning_parameter_schedule(rate):
    return rate


def momentum_schedule(momentum):
    return momentum


def momentum_sgd(parameters, rate, momentum, unit_gain=True):
    return types.SimpleNamespace(parameters=parameters, rate=rate, momentum=momentum)


class Value:
    def __init__(self, batch, device=None):
        self.shape, self.batch = batch.shape, batch

    def asarray(self):
        return self.batch


class Trainer:
    def __init__(self, model, criterion, learners):
        self.steps, self.previous_minibatch_loss_average = 0, None

    def train_minibatch(self, arguments):
        assert arguments, "an empty minibatch"
        self.steps += 1
        if str(self.steps) == os.environ.get("CNTK_STANDIN_EXIT_AT_STEP"):
            os._exit(3)
        time.sleep(float(os.environ.get("CNTK_STANDIN_STEP_S", "0.002")))
        self.previous_minibatch_loss_average = 2.3 / self.steps


def _layer(apply):
    return lambda *args, **kwargs: lambda x: apply(x, *args, **kwargs)


def _convolution(x, filter_shape, num_filters, pad, strides, bias, init):
    spatial = [_window(n, k, s, pad) for n, k, s in zip(x.shape[1:], filter_shape, strides)]
    new = [Parameter(num_filters, x.shape[0], *filter_shape)] + ([Parameter(num_filters)] if bias else [])
    return Variable((num_filters, *spatial), x, new=new)


def _batch_normalization(x, map_rank, epsilon):
    assert map_rank == 1
    return Variable(x.shape, x, new=[Parameter(x.shape[0]), Parameter(x.shape[0])])  # scale, bias


def _dense(x, units, bias, init):
    new = [Parameter(*x.shape, units)] + ([Parameter(units)] if bias else [])
    return Variable((units,), x, new=new)


def _recurrence(step):
    """Recurrence(LSTM(units)) over a sequence of feature vectors: W (features, 4 units), b (4 units),
    H (units, 4 units)."""
    units = step["units"]

    def apply(x):
        (features,) = x.shape
        return Variable((units,), x, new=[Parameter(features, 4 * units), Parameter(4 * units),
                                         Parameter(units, 4 * units)])
    return apply


layers = types.ModuleType("cntk.layers")
layers.LSTM = lambda units, init=None: {"units": units}
layers.Recurrence = _recurrence
layers.Convolution2D = _layer(_convolution)
layers.BatchNormalization = _layer(_batch_normalization)
layers.Dense = _layer(_dense)
layers.Dropout = _layer(lambda x, dropout_rate: Variable(x.shape, x))
layers.GlobalAveragePooling = _layer(lambda x: Variable((x.shape[0], 1, 1), x))


class _ImageDeserializer:
    """Finds every image of the map file from the working directory, as CNTK's reader does."""

    def __init__(self, map_file, streams):
        lines = Path(map_file).read_text().splitlines()
        missing = [line for line in lines if not Path(line.split("\t")[0]).is_file()]
        assert lines and not missing, f"{len(missing)} of {len(lines)} images not found from {os.getcwd()}"
        mean_file = next(t["mean"] for t in streams["features"]["transforms"] if "mean" in t)
        assert Path(mean_file).read_text().startswith("<?xml"), mean_file
        self.labels = [int(line.split("\t")[1]) for line in lines]
        self.classes, self.transforms = streams["labels"]["shape"], streams["features"]["transforms"]


class _MinibatchSource:
    """Training (sweep after sweep): batches of zeros. One sweep: the map file's images in order, their labels
    one-hot, then an empty minibatch, as CNTK's source ends."""

    def __init__(self, deserializer, randomize, max_sweeps, multithreaded_deserializer):
        # CNTK's default (None: multithreaded for an image reader) is never what the worker means
        assert isinstance(multithreaded_deserializer, bool), multithreaded_deserializer
        self.streams = types.SimpleNamespace(features="features", labels="labels")
        self.deserializer, self.max_sweeps, self.position = deserializer, max_sweeps, 0
        assert randomize == (max_sweeps == INFINITELY_REPEAT), "one sweep in order, or random sweeps"

    def next_minibatch(self, size, input_map, num_data_partitions=1, partition_index=0):
        assert 0 <= partition_index < num_data_partitions
        if self.max_sweeps == INFINITELY_REPEAT:
            return {variable: Value(np.zeros((size, 1))) for variable in input_map}
        labels = self.deserializer.labels[self.position:self.position + size]
        self.position += len(labels)
        if not labels:
            return {}
        streams = {"features": np.zeros((len(labels), 1), np.float32),
                   "labels": np.eye(self.deserializer.classes, dtype=np.float32)[labels]}
        return {variable: Value(streams[stream]) for variable, stream in input_map.items()}


io = types.ModuleType("cntk.io")
io.INFINITELY_REPEAT = INFINITELY_REPEAT
io.ImageDeserializer = _ImageDeserializer
io.MinibatchSource = _MinibatchSource
io.StreamDefs = dict
io.StreamDef = lambda field, **options: {"field": field, **options}
io.transforms = types.ModuleType("cntk.io.transforms")
io.transforms.crop = lambda **options: {"crop": options}
io.transforms.scale = lambda **options: {"scale": options}
io.transforms.mean = lambda filename: {"mean": filename}

sequence = types.ModuleType("cntk.sequence")
sequence.input_variable = lambda shape, dtype=None: Variable((shape,))
sequence.last = lambda x: Variable(x.shape, x)

device = types.ModuleType("cntk.device")
device.DeviceKind = types.SimpleNamespace(CPU="cpu", GPU="gpu")
device.cpu = lambda: types.SimpleNamespace(type=lambda: "cpu")
device.gpu = lambda index: types.SimpleNamespace(type=lambda: "gpu")
device.all_devices = lambda: [device.cpu()]
device.try_set_default_device = lambda chosen: True

cntk_py = types.ModuleType("cntk.cntk_py")
cntk_py.set_max_num_cputhreads = lambda count: None

train = types.ModuleType("cntk.train")
train.distributed = types.ModuleType("cntk.train.distributed")
train.distributed.data_parallel_distributed_learner = lambda learner: learner  # no all-reduce: no MPI here
train.distributed.Communicator = types.SimpleNamespace(finalize=lambda: None)

sys.modules.update({"cntk.layers": layers, "cntk.io": io, "cntk.io.transforms": io.transforms,
                    "cntk.sequence": sequence, "cntk.device": device, "cntk.cntk_py": cntk_py, "cntk.train": train,
                    "cntk.train.distributed": train.distributed})
