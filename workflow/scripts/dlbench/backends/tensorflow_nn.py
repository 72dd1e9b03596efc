"""TensorFlow's low-level API, inference only: the network built from its description in raw ``tf.nn`` ops
(``conv2d``, ``max_pool2d``, ``batch_normalization``, ``matmul``) on ``tf.Variable`` weights, called in a
``tf.function`` on the TensorFlow backend's input pipeline. Seed 002 set a hand-written LeNet beside the
frameworks' APIs; this is that LeNet in TensorFlow's own ops, beside Keras's layers (``tensorflow``, whose
numbers the API-cost table divides by) and ONNX Runtime. Images are NHWC, as in the TensorFlow backend;
padding is the description's own (symmetric, and -inf for pooling), not Keras's "same"."""
from __future__ import annotations

import math

import tensorflow as tf

from .. import networks
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import Unavailable
from .tensorflow import (  # noqa: F401 - the backend interface: TensorFlow's own
    PACKAGES,
    cuda_build,
    dataset,
    framework_version,
    gpu_allocator_peak_mib,
    gpu_code,
    run_devices,
)


class RawBuilder:
    """A description as a function of an NHWC tensor made of ``tf.nn`` ops; its weights by the description's layer
    name (:class:`networks.Named`), in the order and shapes Keras's layer of that name keeps them (a convolution's
    kernel HWIO, then its bias; batch norm's gamma, beta, moving mean and variance), so that one builder's weights
    can be given to the other. Glorot-uniform weights and zero biases, as every builder's."""

    def __init__(self, seed: int):
        self.generator, self.layers, self.trainable, self._pending = tf.random.Generator.from_seed(seed), {}, 0, []

    def name_leaf(self, built, name: str):
        self.layers[name], self._pending = self._pending, []
        return built

    def _variable(self, value, trains: bool = True) -> tf.Variable:
        """A weight; ``trains``: whether training would change it (batch norm's moving statistics: not)."""
        variable = tf.Variable(value, trainable=False)  # inference: nothing trains here
        self._pending.append(variable)
        self.trainable += math.prod(variable.shape) if trains else 0
        return variable

    def _glorot(self, shape: tuple, fan_in: int, fan_out: int) -> tf.Variable:
        limit = math.sqrt(6 / (fan_in + fan_out))
        return self._variable(self.generator.uniform(shape, -limit, limit))

    def conv(self, layer, shape):
        channels, area = shape[0], layer.kernel * layer.kernel
        kernel = self._glorot((layer.kernel, layer.kernel, channels, layer.out_channels), channels * area,
                              layer.out_channels * area)
        bias = self._variable(tf.zeros(layer.out_channels)) if layer.bias else None
        padding = [[0, 0], [layer.padding] * 2, [layer.padding] * 2, [0, 0]] if layer.padding else "VALID"

        def apply(x):
            y = tf.nn.conv2d(x, kernel, layer.stride, padding)
            return y if bias is None else tf.nn.bias_add(y, bias)
        return apply

    def batchnorm(self, layer, shape):
        # Inference: the moving statistics, as Keras's layer keeps them (its order: gamma, beta, mean, variance)
        gamma, beta, mean, variance = (self._variable(tf.fill([shape[0]], value), trains)
                                       for value, trains in ((1.0, True), (0.0, True), (0.0, False), (1.0, False)))
        return lambda x: tf.nn.batch_normalization(x, mean, variance, beta, gamma, layer.eps)

    def relu(self, layer, shape):
        return tf.nn.relu

    def maxpool(self, layer, shape):
        # The description's padding, the extra rows and columns of ceil_mode after it, -inf so that no max takes it
        padding = [[0, 0], *map(list, networks.pool_padding(layer, shape)), [0, 0]]

        def apply(x):
            if any(map(any, padding)):
                x = tf.pad(x, padding, constant_values=-math.inf)
            return tf.nn.max_pool2d(x, layer.kernel, layer.stride, "VALID")
        return apply

    def globalavgpool(self, layer, shape):
        return lambda x: tf.reduce_mean(x, axis=[1, 2], keepdims=True)

    def flatten(self, layer, shape):
        return lambda x: tf.reshape(x, [tf.shape(x)[0], -1])

    def dense(self, layer, shape):
        weights = self._glorot((shape[0], layer.out_features), shape[0], layer.out_features)
        bias = self._variable(tf.zeros(layer.out_features)) if layer.bias else None

        def apply(x):
            y = tf.matmul(x, weights)
            return y if bias is None else tf.nn.bias_add(y, bias)
        return apply

    def dropout(self, layer, shape):
        return lambda x: x  # inference

    def lstm(self, layer, shape):
        raise Unavailable("tf.nn has no LSTM op: the raw-op builder builds convolutional and dense networks")

    def sequential(self, children):
        return networks.in_sequence(children)

    def concat(self, branches):
        return lambda x: tf.concat([branch(x) for branch in branches], axis=-1)

    def residual(self, body, shortcut):
        return lambda x: body(x) + (x if shortcut is None else shortcut(x))


class Model:
    """The raw-op network: a function of NHWC images, its weights by layer and how many of them would train."""

    def __init__(self, description: networks.Network, seed: int = 0):
        builder = RawBuilder(seed)
        self.forward = networks.build(description, networks.Named(builder))
        self.layers, self.trainable = builder.layers, builder.trainable  # weights by layer name


def build(description: networks.Network, seed: int = 0) -> Model:
    return Model(description, seed)


def trainable_parameters(model: Model) -> int:
    return model.trainable


def forward_shape(model: Model, images) -> tuple:
    """The output shape for float32 ``images`` in the description's layout (NCHW)."""
    return tuple(model.forward(tf.transpose(tf.constant(images), [0, 2, 3, 1])).shape)


class Harness:
    INFERENCE_IDIOM = "raw tf.nn ops (conv2d, max_pool2d, matmul) on tf.Variables, in a tf.function"

    def __init__(self, spec: RunSpec, description: networks.Network):
        devices = run_devices(spec)
        with tf.device(devices[0]):
            self.model = build(description, spec.seed)
            self.images = next(iter(dataset(spec, description)))[0]  # the TensorFlow backend's batch, NHWC
        self.gpus, self.output = spec.gpus, None

    def inference(self, batch_size: int):
        images, forward = self.images[:batch_size], tf.function(self.model.forward)

        def call():
            self.output = forward(images)  # what synchronize waits for
            return self.output.numpy if self.gpus else already_finished
        return call

    def synchronize(self) -> None:
        if self.output is not None:
            self.output.numpy()

    def allocator_peak_mib(self) -> float | None:
        return gpu_allocator_peak_mib(["/gpu:0"]) if self.gpus else None

    def input_wait_seconds(self) -> None:
        return None  # inference runs on a resident batch
