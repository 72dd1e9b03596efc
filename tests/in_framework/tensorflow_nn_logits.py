"""Run by tests/unit/backends/test_tensorflow_nn.py in TensorFlow's environment: each network built in raw tf.nn ops and
by Keras's layers (the TensorFlow backend's builder), Keras's weights given to the raw ops; print, per network, both
trainable-parameter counts, the largest difference of their logits (inference mode) before and after, and the
largest logit, as JSON."""
import json

import keras
import numpy as np
import tensorflow as tf
from dlbench import networks
from dlbench.backends import keras_layers, tensorflow_nn

result = {}
for name, sized_for in (("lenet", "mnist"), ("alexnet_bn", "cifar10"), ("googlenet", "cifar10"),
                        ("resnet18", "cifar10"), ("mlp", "mnist")):
    description = networks.network(name, sized_for)
    keras.utils.set_random_seed(0)
    model, raw = keras_layers.build(description), tensorflow_nn.build(description, seed=1)
    # Keras's randomised moving statistics, so that batch norm's inference path is compared on more than 0 and 1
    for index, weight in enumerate(model.weights):
        low, high = (-0.1, 0.1) if "moving_mean" in weight.path else (0.5, 1.5)
        if "moving" in weight.path:
            weight.assign(np.random.default_rng(index).uniform(low, high, weight.shape).astype(np.float32))
    images = np.random.default_rng(2).standard_normal((3, *description.input_shape)).astype(np.float32)
    nhwc = keras_layers.keras_layout(images)
    expected = model(nhwc, training=False).numpy()
    before = np.abs(raw.forward(tf.constant(nhwc)).numpy() - expected).max()  # its own weights: other logits
    for layer, variables in raw.layers.items():  # Keras's layers carry the description's names too
        for variable, weight in zip(variables, model.get_layer(layer).weights, strict=True):
            variable.assign(weight)
    difference = np.abs(raw.forward(tf.constant(nhwc)).numpy() - expected).max()
    result[f"{name}/{sized_for}"] = {"raw": tensorflow_nn.trainable_parameters(raw),
                                     "keras": keras_layers.trainable_parameters(model),
                                     "described": networks.trainable_parameters(description),
                                     "largest_difference": float(difference), "before_copy": float(before),
                                     "largest_logit": float(np.abs(expected).max())}
print(json.dumps(result))
