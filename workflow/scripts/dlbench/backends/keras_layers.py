"""Keras 3 layers for the network descriptions: one builder for the TensorFlow backend and for
Keras's high-level API on every Keras backend (TensorFlow, JAX, PyTorch). Images are NHWC
(Keras's default, TensorFlow's native layout); sequences (batch, steps, features) as they are."""
from __future__ import annotations

import math

import keras
import numpy as np

from .. import networks
from . import UPDATE_SCOPE

layers = keras.layers
POLICIES = {"bf16": "mixed_bfloat16", "fp16": "mixed_float16"}  # Keras's names; else float32


def set_precision(precision: str) -> None:
    """Keras's dtype policy for the layers built next: mixed precision keeps the variables in fp32,
    and Keras computes losses in fp32."""
    keras.mixed_precision.set_dtype_policy(POLICIES.get(precision, "float32"))


def _padding(layer, shape) -> str | None:
    """Keras's name for the description's padding where one exists: "valid", or "same" where it
    gives the description's output size (its split of the padding may differ by one pixel, as
    TensorFlow's reference models have it); None where explicit padding is needed."""
    ceil_mode = getattr(layer, "ceil_mode", False)
    if layer.padding == 0 and not ceil_mode:
        return "valid"
    described = [networks.window_output_size(n, layer.kernel, layer.stride, layer.padding, ceil_mode)
                 for n in shape[1:]]
    return "same" if described == [math.ceil(n / layer.stride) for n in shape[1:]] else None


class KerasBuilder:
    """Turns a :mod:`dlbench.networks` description into a function of a Keras tensor (NHWC)."""

    def name_leaf(self, layer: keras.Layer, name: str) -> keras.Layer:
        """The description's name for the layer (networks.Named): the name scope of its ops, which
        TensorFlow's profiler reports."""
        layer.name = name
        return layer

    def conv(self, layer, shape):
        padding = _padding(layer, shape)
        conv = layers.Conv2D(layer.out_channels, layer.kernel, layer.stride, padding=padding or "valid",
                             use_bias=layer.bias)
        return conv if padding else keras.Sequential([layers.ZeroPadding2D(layer.padding), conv])

    def batchnorm(self, layer, shape):
        return layers.BatchNormalization(epsilon=layer.eps, momentum=0.9)  # PyTorch's momentum 0.1

    def relu(self, layer, shape):
        return layers.ReLU()

    def maxpool(self, layer, shape):
        padding = _padding(layer, shape)
        if padding is None:  # none of the five networks needs it: padded pooling would be -inf padding
            raise ValueError(f"max-pooling {layer} on {shape} has no Keras padding mode")
        return layers.MaxPooling2D(layer.kernel, layer.stride, padding=padding)

    def globalavgpool(self, layer, shape):
        return layers.GlobalAveragePooling2D(keepdims=True)

    def flatten(self, layer, shape):
        return layers.Flatten()

    def dense(self, layer, shape):
        return layers.Dense(layer.out_features, use_bias=layer.bias)

    def dropout(self, layer, shape):
        return layers.Dropout(layer.rate)

    def lstm(self, layer, shape):
        return layers.LSTM(layer.units)

    def sequential(self, children):
        return networks.in_sequence(children)

    def concat(self, branches):
        join = layers.Concatenate()
        return lambda x: join([branch(x) for branch in branches])

    def residual(self, body, shortcut):
        add = layers.Add()
        return lambda x: add([body(x), x if shortcut is None else shortcut(x)])


def keras_layout(batch: np.ndarray) -> np.ndarray:
    """A batch of the description's inputs as Keras takes it: images NCHW -> NHWC, sequences unchanged."""
    return batch.transpose(0, 2, 3, 1) if batch.ndim == 4 else batch


def build(description: networks.Network) -> keras.Model:
    images = keras.Input(keras_layout(np.empty((1, *description.input_shape), np.float32)).shape[1:])
    return keras.Model(images, networks.build(description, networks.Named(KerasBuilder()))(images),
                       name=description.name)


def trainable_parameters(model: keras.Model) -> int:
    return sum(math.prod(weight.shape) for weight in model.trainable_weights)


def forward_shape(model: keras.Model, images: np.ndarray) -> tuple:
    """The output shape for float32 ``images`` in the description's layout (inference mode)."""
    return tuple(model(keras_layout(images), training=False).shape)


def keras_optimizer(rule: networks.Optimizer, learning_rate: float, layers: list[str]) -> keras.optimizers.Optimizer:
    """The network's optimizer in Keras (for TensorFlow's backend and Keras 3 on any backend), each weight's update in
    the name scope of its description layer (:func:`updates_in_layer_scopes`)."""
    if rule.kind == "rmsprop":
        optimizer = keras.optimizers.RMSprop(learning_rate, rho=rule.rho, epsilon=rule.epsilon)
    else:
        optimizer = keras.optimizers.SGD(learning_rate, momentum=rule.momentum)
    return updates_in_layer_scopes(optimizer, set(layers))


def updates_in_layer_scopes(optimizer: keras.optimizers.Optimizer, layers: set[str]) -> keras.optimizers.Optimizer:
    """Each weight's update runs in the name scope ``weight_update/<layer>`` of the description layer that owns the
    weight (the layer's name is in the weight's path), so that TensorFlow's and JAX's profilers can attribute the
    optimizer's ops to the layers, as seed 004 did with the momentum update. Names only: the math is the
    optimizer's. Keras on torch updates all weights in one call (its ``_parallel_update_step``), which this does
    not reach."""
    update_step = optimizer.update_step

    def update_step_in_scope(gradient, variable, learning_rate):
        # the index is how Keras's own optimizers find a weight's slots (its momentum)
        path = optimizer._trainable_variables[optimizer._get_variable_index(variable)].path
        layer = next((part for part in path.split("/") if part in layers), None)
        if layer is None:
            return update_step(gradient, variable, learning_rate)
        with keras.name_scope(UPDATE_SCOPE), keras.name_scope(layer):
            return update_step(gradient, variable, learning_rate)
    optimizer.update_step = update_step_in_scope
    return optimizer
