"""Framework-neutral network descriptions.

A network is data: a tree of a few layer kinds (leaves) and three combinators
(``Sequential``, ``Concat`` of parallel branches, ``Residual`` addition). Shapes and
trainable-parameter counts are computed here, without any framework, so that every
backend's builder can be checked against the same numbers.

A backend builds a model by implementing one method per layer kind plus the three
combinators and calling :func:`build`; the walk hands each method its input shape.

Every builder starts convolutions and dense layers from :data:`INITIALISATION` (what Keras, Gluon's
``Xavier()`` and CNTK do by default; PyTorch and Caffe are told), so that the accuracy task compares
frameworks from the same starting distribution.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Protocol

INITIALISATION = "Glorot (Xavier) uniform weights over the average of fan-in and fan-out, zero biases"
# (channels, height, width) for images, (steps, features) for sequences, (features,) after Flatten
Shape = tuple[int, ...]


@dataclass(frozen=True)
class Conv:
    out_channels: int
    kernel: int
    stride: int = 1
    padding: int = 0
    bias: bool = True


@dataclass(frozen=True)
class BatchNorm:
    eps: float = 1e-5


@dataclass(frozen=True)
class ReLU:
    pass


@dataclass(frozen=True)
class MaxPool:
    kernel: int
    stride: int
    padding: int = 0
    ceil_mode: bool = False


@dataclass(frozen=True)
class GlobalAvgPool:
    pass


@dataclass(frozen=True)
class Flatten:
    pass


@dataclass(frozen=True)
class Dense:
    out_features: int
    bias: bool = True


@dataclass(frozen=True)
class Dropout:
    rate: float


@dataclass(frozen=True)
class LSTM:
    """A long short-term memory layer over (steps, features), its output at the last step (Keras's
    ``return_sequences=False``). One bias vector per gate, as Keras, Caffe and CNTK have it: the
    input and recurrent projections share it (PyTorch and Gluon, which keep one each, train one)."""

    units: int


@dataclass(frozen=True)
class Sequential:
    layers: tuple


@dataclass(frozen=True)
class Concat:
    """Parallel branches on the same input, concatenated along channels."""

    branches: tuple


@dataclass(frozen=True)
class Residual:
    """``body(x) + shortcut(x)``; a ``None`` shortcut is the identity."""

    body: Sequential
    shortcut: Sequential | None = None


@dataclass(frozen=True)
class Network:
    name: str
    sized_for: str  # the dataset family the network is sized for: mnist | cifar10 | imagenet | text
    input_shape: Shape
    num_classes: int
    body: Sequential


# ---------------------------------------------------------------- shapes and parameters


def window_output_size(size: int, kernel: int, stride: int, padding: int, ceil_mode: bool = False) -> int:
    """Output length of a convolution or pooling window sliding over ``size`` (PyTorch/Caffe rules)."""
    span = size + 2 * padding - kernel
    out = (math.ceil(span / stride) if ceil_mode else span // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + padding:
        out -= 1  # the last window must start inside the input (Caffe/PyTorch rule)
    return out


def pool_padding(layer: MaxPool, shape: Shape) -> list[tuple[int, int]]:
    """A max-pooling window's padding before and after each spatial axis, for a framework that pools unpadded
    windows: the description's padding, and after it the extra rows and columns that ``ceil_mode`` windows reach."""
    padding = []
    for size in shape[1:]:
        out = window_output_size(size, layer.kernel, layer.stride, layer.padding, layer.ceil_mode)
        extra = max((out - 1) * layer.stride + layer.kernel - size - 2 * layer.padding, 0)
        padding.append((layer.padding, layer.padding + extra))
    return padding


def _leaf_shape_and_params(layer: Any, shape: Shape) -> tuple[Shape, int]:
    if isinstance(layer, Conv):
        c, h, w = shape
        size = lambda n: window_output_size(n, layer.kernel, layer.stride, layer.padding)
        params = layer.out_channels * c * layer.kernel**2 + (layer.out_channels if layer.bias else 0)
        return (layer.out_channels, size(h), size(w)), params
    if isinstance(layer, BatchNorm):
        return shape, 2 * shape[0]  # scale and shift; running statistics are not trainable
    if isinstance(layer, MaxPool):
        c, h, w = shape
        size = lambda n: window_output_size(n, layer.kernel, layer.stride, layer.padding, layer.ceil_mode)
        return (c, size(h), size(w)), 0
    if isinstance(layer, GlobalAvgPool):
        return (shape[0], 1, 1), 0
    if isinstance(layer, Flatten):
        return (math.prod(shape),), 0
    if isinstance(layer, Dense):
        (features,) = shape
        return (layer.out_features,), layer.out_features * features + (layer.out_features if layer.bias else 0)
    if isinstance(layer, LSTM):
        _, features = shape
        gates = 4 * layer.units  # input, forget, cell, output
        return (layer.units,), gates * (features + layer.units) + gates
    if isinstance(layer, (ReLU, Dropout)):
        return shape, 0
    raise TypeError(f"unknown layer kind {type(layer).__name__}")


class Builder(Protocol):
    """What a backend implements to turn a description into a model: one method per leaf layer kind,
    named after its class in lower case and given ``(layer, input_shape)``, and the three
    combinators, given their already-built children."""

    def conv(self, layer: Conv, shape: Shape) -> Any: ...

    def batchnorm(self, layer: BatchNorm, shape: Shape) -> Any: ...

    def relu(self, layer: ReLU, shape: Shape) -> Any: ...

    def maxpool(self, layer: MaxPool, shape: Shape) -> Any: ...

    def globalavgpool(self, layer: GlobalAvgPool, shape: Shape) -> Any: ...

    def flatten(self, layer: Flatten, shape: Shape) -> Any: ...

    def dense(self, layer: Dense, shape: Shape) -> Any: ...

    def dropout(self, layer: Dropout, shape: Shape) -> Any: ...

    def lstm(self, layer: LSTM, shape: Shape) -> Any: ...

    def sequential(self, children: list) -> Any: ...

    def concat(self, branches: list) -> Any: ...

    def residual(self, body: Any, shortcut: Any | None) -> Any: ...


def walk(node: Any, shape: Shape, builder: Builder | None = None) -> tuple[Any, Shape, int]:
    """Walk a description from ``shape``; return (built model or None, output shape, params)."""
    if isinstance(node, Sequential):
        children, total = [], 0
        for layer in node.layers:
            child, shape, params = walk(layer, shape, builder)
            children.append(child)
            total += params
        return (builder.sequential(children) if builder else None), shape, total
    if isinstance(node, Concat):
        outs = [walk(branch, shape, builder) for branch in node.branches]
        spatial = {out_shape[1:] for _, out_shape, _ in outs}
        if len(spatial) != 1:
            raise ValueError(f"Concat branches disagree on spatial size: {sorted(spatial)}")
        channels = sum(out_shape[0] for _, out_shape, _ in outs)
        built = builder.concat([child for child, _, _ in outs]) if builder else None
        return built, (channels, *spatial.pop()), sum(params for _, _, params in outs)
    if isinstance(node, Residual):
        body, body_shape, body_params = walk(node.body, shape, builder)
        if node.shortcut is None:
            shortcut, short_shape, short_params = None, shape, 0
        else:
            shortcut, short_shape, short_params = walk(node.shortcut, shape, builder)
        if body_shape != short_shape:
            raise ValueError(f"Residual body {body_shape} and shortcut {short_shape} differ")
        built = builder.residual(body, shortcut) if builder else None
        return built, body_shape, body_params + short_params
    out_shape, params = _leaf_shape_and_params(node, shape)
    built = getattr(builder, type(node).__name__.lower())(node, shape) if builder else None
    return built, out_shape, params


def build(network: Network, builder: Builder) -> Any:
    model, shape, _ = walk(network.body, network.input_shape, builder)
    if shape != (network.num_classes,):
        raise ValueError(f"{network.name}: output shape {shape}, expected ({network.num_classes},)")
    return model


def trainable_parameters(network: Network) -> int:
    return walk(network.body, network.input_shape)[2]


COMBINATORS = ("sequential", "concat", "residual")


def in_sequence(functions: list) -> Any:
    """The functions applied one after another: ``sequential`` of a builder whose layers are functions."""
    def apply(x):
        for function in functions:
            x = function(x)
        return x
    return apply


class Named:
    """A builder that builds with ``inner`` and keeps each leaf it builds under its name in the description:
    its kind and its number among the leaves of that kind in walk order (``conv1``, ``relu3``), the same in
    every framework, so that a profile's layers can be compared across frameworks. A builder whose
    framework names its layers itself gives them that name in its ``name_leaf(built, name)``."""

    def __init__(self, inner: Any = None):
        self.inner, self.leaves, self._counts = inner, {}, {}

    def __getattr__(self, kind: str):
        method = getattr(self.inner, kind) if self.inner is not None else lambda *args: None
        if kind in COMBINATORS:
            return method

        def build(layer, shape):
            self._counts[kind] = self._counts.get(kind, 0) + 1
            name = f"{kind}{self._counts[kind]}"
            built = method(layer, shape)
            if hasattr(self.inner, "name_leaf"):
                built = self.inner.name_leaf(built, name)
            self.leaves[name] = built
            return built
        return build


def layer_names(network: Network) -> list[str]:
    """The description's leaf names in walk order (see :class:`Named`)."""
    named = Named()
    walk(network.body, network.input_shape, named)
    return list(named.leaves)


WEIGHTED_KINDS = {"conv": "conv", "dense": "fc", "lstm": "lstm"}  # leaf kind -> its block's name (seed 004's)
FORWARD_KINDS = ("dropout", "flatten")  # leaves that prepare the next weighted layer's input


def layer_groups(network: Network) -> dict[str, str]:
    """Each leaf's block as seed 004 grouped its per-layer times (conv1–5, fc1, fc2, output): every weighted layer
    opens a block (``conv<k>``, ``fc<k>``; the last one ``output``) that holds the leaves after it (its batch norm,
    activation, pooling); dropout and flatten belong to the next weighted layer, as the seed's variable scopes put
    the dropout in fc1; leaves before the first weighted layer, to it."""
    names = layer_names(network)
    kinds = [name.rstrip("0123456789") for name in names]
    counts, blocks, current = {}, [], None
    for kind in kinds:
        if kind in WEIGHTED_KINDS:
            block = WEIGHTED_KINDS[kind]
            counts[block] = counts.get(block, 0) + 1
            current = f"{block}{counts[block]}"
        blocks.append(current)
    last_weighted = max(index for index, kind in enumerate(kinds) if kind in WEIGHTED_KINDS)
    blocks = ["output" if block == blocks[last_weighted] else block for block in blocks]
    # dropout and flatten join the block of the next weighted layer; leading leaves the first weighted layer's
    following = None
    for index in reversed(range(len(names))):
        if kinds[index] in WEIGHTED_KINDS:
            following = blocks[index]
        elif (kinds[index] in FORWARD_KINDS or blocks[index] is None) and following:
            blocks[index] = following
    return dict(zip(names, blocks))


class FlopCounter:
    """A :class:`Builder` whose "model" counts training FLOPs per image, by the convention of
    ``torch.utils.flop_counter``: 2 × multiply-adds of convolutions and dense layers, no other layer.
    A step's backward pass computes each such layer's weight gradient (as many FLOPs as its forward)
    and its input gradient (as many again) unless nothing before it is trainable: the first layers
    on the data's path compute none. So each leaf builds a function of "does my input need a
    gradient?" returning (FLOPs, does my output?). With ``training=False`` it counts the forward pass only."""

    def __init__(self, training: bool = True):
        self.training = training

    def _weighted(self, forward: int):
        if not self.training:
            return lambda needs_gradient: (forward, True)
        return lambda needs_gradient: (forward * (3 if needs_gradient else 2), True)

    def conv(self, layer, shape):
        (channels, height, width), _ = _leaf_shape_and_params(layer, shape)
        return self._weighted(2 * shape[0] * layer.kernel**2 * channels * height * width)

    def dense(self, layer, shape):
        return self._weighted(2 * shape[0] * layer.out_features)

    def lstm(self, layer, shape):
        steps, features = shape
        gates = 4 * layer.units
        projection, recurrence = 2 * features * gates, 2 * layer.units * gates  # one step's forward
        forward = steps * (projection + recurrence)
        if not self.training:
            return lambda needs_gradient: (forward, True)
        # Backward: every step's weight gradients; the state's input gradient at every step but the first
        # (the initial state is a constant); the input's as for the other layers.
        backward = forward + (steps - 1) * recurrence
        return lambda needs_gradient: (forward + backward + (steps * projection if needs_gradient else 0), True)

    def batchnorm(self, layer, shape):
        return lambda needs_gradient: (0, True)  # trainable scale and shift, not counted

    def _free(self, layer, shape):
        return lambda needs_gradient: (0, needs_gradient)

    relu = maxpool = globalavgpool = flatten = dropout = _free

    def sequential(self, children):
        def count(needs_gradient):
            total = 0
            for child in children:
                flops, needs_gradient = child(needs_gradient)
                total += flops
            return total, needs_gradient
        return count

    def concat(self, branches):
        def count(needs_gradient):
            counted = [branch(needs_gradient) for branch in branches]
            return sum(flops for flops, _ in counted), any(needs for _, needs in counted)
        return count

    def residual(self, body, shortcut):
        return self.concat([body, shortcut or self._free(None, None)])


def training_flops(network: Network) -> int:
    """FLOPs of one training step (forward and backward) per image, as ``FlopCounterMode`` counts them."""
    return build(network, FlopCounter())(False)[0]


def inference_flops(network: Network) -> int:
    """FLOPs of one forward pass per image, as ``FlopCounterMode`` counts them."""
    return build(network, FlopCounter(training=False))(False)[0]


# ---------------------------------------------------------------- the networks


def _seq(*layers: Any) -> Sequential:
    return Sequential(tuple(layers))


def _conv_relu(out: int, kernel: int, stride: int = 1, padding: int = 0) -> tuple:
    return Conv(out, kernel, stride, padding), ReLU()


def _conv_bn(out: int, kernel: int, stride: int = 1, padding: int = 0, eps: float = 1e-5) -> tuple:
    return Conv(out, kernel, stride, padding, bias=False), BatchNorm(eps)


def _conv_bn_relu(out: int, kernel: int, stride: int = 1, padding: int = 0) -> tuple:
    return (*_conv_bn(out, kernel, stride, padding), ReLU())


def _classifier(hidden: int, classes: int, dropout: float = 0.5, batch_norm: bool = False) -> tuple:
    hidden_layer = (Dense(hidden, bias=False), BatchNorm(), ReLU()) if batch_norm else (Dense(hidden), ReLU())
    return (Dropout(dropout), *hidden_layer, Dropout(dropout), *hidden_layer, Dense(classes))


def lenet(sized_for: str = "mnist") -> Network:
    """Caffe's LeNet (examples/mnist/lenet_train_test.prototxt), as the thesis trained it."""
    body = _seq(
        Conv(20, 5), MaxPool(2, 2), Conv(50, 5), MaxPool(2, 2),
        Flatten(), Dense(500), ReLU(), Dense(10),
    )
    return Network("lenet", sized_for, (1, 28, 28), 10, body)


def alexnet(sized_for: str, batch_norm: bool = False) -> Network:
    """ImageNet: the single-tower AlexNet of torchvision (61,100,840 parameters).
    CIFAR10: the same five convolutions and classifier, with 5x5/3x3 kernels for 32x32 input.
    ``batch_norm``: seed 004's AlexNet, batch norm before every ReLU (convolutions and hidden dense layers,
    their biases then redundant and left out), dropout before each hidden dense layer as in torchvision's."""
    unit = _conv_bn_relu if batch_norm else _conv_relu
    first = unit(64, 11, 4, 2) if sized_for == "imagenet" else unit(64, 5, 1, 2)
    features = (
        *first, MaxPool(3, 2), *unit(192, 5, 1, 2), MaxPool(3, 2),
        *unit(384, 3, 1, 1), *unit(256, 3, 1, 1), *unit(256, 3, 1, 1), MaxPool(3, 2),
    )
    classes = _classes(sized_for)
    return Network("alexnet_bn" if batch_norm else "alexnet", sized_for, _input(sized_for), classes,
                   _seq(*features, Flatten(), *_classifier(4096, classes, batch_norm=batch_norm)))


def alexnet_bn(sized_for: str) -> Network:
    """Seed 004's AlexNet with batch norm (ImageNet: 61,108,184 parameters)."""
    return alexnet(sized_for, batch_norm=True)


VGG_CONVS = {  # Simonyan & Zisserman's configurations: output channels of each 3x3 convolution, "M" a 2x2 max-pool
    "vgg11": (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),  # A
    "vgg16": (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"),  # D
}


def _vgg(name: str, sized_for: str) -> Network:
    """VGG without batch norm. CIFAR10: the same convolutions, a 512-wide classifier on the 1x1x512 map."""
    features = tuple(
        layer for width in VGG_CONVS[name]
        for layer in ((MaxPool(2, 2),) if width == "M" else _conv_relu(width, 3, 1, 1))
    )
    classes = _classes(sized_for)
    hidden = 4096 if sized_for == "imagenet" else 512
    return Network(name, sized_for, _input(sized_for), classes,
                   _seq(*features, Flatten(), *_classifier(hidden, classes)))


def vgg16(sized_for: str) -> Network:
    """VGG16 (configuration D). ImageNet: 138,357,544 parameters."""
    return _vgg("vgg16", sized_for)


def vgg11(sized_for: str) -> Network:
    """VGG-11 (configuration A; seed 004's). ImageNet: 132,863,336 parameters."""
    return _vgg("vgg11", sized_for)


def _bottleneck(width: int, stride: int, projection: bool) -> tuple:
    """ResNet v1.5 bottleneck (stride on the 3x3 convolution, as torchvision)."""
    body = _seq(*_conv_bn(width, 1), ReLU(), *_conv_bn(width, 3, stride, 1), ReLU(), *_conv_bn(4 * width, 1))
    shortcut = _seq(*_conv_bn(4 * width, 1, stride)) if projection else None
    return Residual(body, shortcut), ReLU()


def _basic_block(width: int, stride: int, projection: bool) -> tuple:
    """ResNet basic block (two 3x3 convolutions, as torchvision's ResNet-18)."""
    body = _seq(*_conv_bn(width, 3, stride, 1), ReLU(), *_conv_bn(width, 3, 1, 1))
    shortcut = _seq(*_conv_bn(width, 1, stride)) if projection else None
    return Residual(body, shortcut), ReLU()


def _resnet(name: str, sized_for: str, block, depths: tuple, expansion: int) -> Network:
    """ImageNet: 7x7/2 stem and max-pool. CIFAR10: a 3x3/1 stem without max-pool, as in the usual CIFAR
    adaptations. A stage's first block projects its shortcut where the shape changes."""
    if sized_for == "imagenet":
        stem = (*_conv_bn(64, 7, 2, 3), ReLU(), MaxPool(3, 2, 1))
    else:
        stem = (*_conv_bn(64, 3, 1, 1), ReLU())
    blocks = []
    for stage, (width, depth) in enumerate(zip((64, 128, 256, 512), depths)):
        for index in range(depth):
            stride = 2 if stage > 0 and index == 0 else 1
            blocks.extend(block(width, stride, projection=index == 0 and (stride > 1 or expansion > 1)))
    classes = _classes(sized_for)
    return Network(name, sized_for, _input(sized_for), classes,
                   _seq(*stem, *blocks, GlobalAvgPool(), Flatten(), Dense(classes)))


def resnet50(sized_for: str) -> Network:
    """ResNet-50 (bottleneck blocks). ImageNet: 25,557,032 parameters."""
    return _resnet("resnet50", sized_for, _bottleneck, (3, 4, 6, 3), expansion=4)


def resnet18(sized_for: str) -> Network:
    """ResNet-18 (basic blocks; seed 003's). ImageNet: 11,689,512 parameters; CIFAR10: 11,173,962."""
    return _resnet("resnet18", sized_for, _basic_block, (2, 2, 2, 2), expansion=1)


def _basic_conv(out: int, kernel: int, stride: int = 1, padding: int = 0) -> Sequential:
    return _seq(*_conv_bn(out, kernel, stride, padding, eps=1e-3), ReLU())


def _inception(c1: int, c3r: int, c3: int, c5r: int, c5: int, pool: int) -> Concat:
    """GoogLeNet inception module as torchvision builds it (its "5x5" branch uses a 3x3 kernel)."""
    return Concat((
        _basic_conv(c1, 1),
        _seq(_basic_conv(c3r, 1), _basic_conv(c3, 3, 1, 1)),
        _seq(_basic_conv(c5r, 1), _basic_conv(c5, 3, 1, 1)),
        _seq(MaxPool(3, 1, 1, ceil_mode=True), _basic_conv(pool, 1)),
    ))


def googlenet(sized_for: str) -> Network:
    """GoogLeNet (Inception v1) with batch norm and without the auxiliary heads.
    ImageNet: 6,624,904 parameters. CIFAR10: a single 3x3 stem, two stride-2 pools."""
    if sized_for == "imagenet":
        stem = (_basic_conv(64, 7, 2, 3), MaxPool(3, 2, ceil_mode=True), _basic_conv(64, 1),
                _basic_conv(192, 3, 1, 1), MaxPool(3, 2, ceil_mode=True))
        reduce3, reduce4 = MaxPool(3, 2, ceil_mode=True), MaxPool(2, 2, ceil_mode=True)
    else:
        stem = (_basic_conv(192, 3, 1, 1),)
        reduce3, reduce4 = MaxPool(3, 2, 1), MaxPool(3, 2, 1)
    classes = _classes(sized_for)
    body = _seq(
        *stem,
        _inception(64, 96, 128, 16, 32, 32), _inception(128, 128, 192, 32, 96, 64), reduce3,
        _inception(192, 96, 208, 16, 48, 64), _inception(160, 112, 224, 24, 64, 64),
        _inception(128, 128, 256, 24, 64, 64), _inception(112, 144, 288, 32, 64, 64),
        _inception(256, 160, 320, 32, 128, 128), reduce4,
        _inception(256, 160, 320, 32, 128, 128), _inception(384, 192, 384, 48, 128, 128),
        GlobalAvgPool(), Flatten(), Dropout(0.2), Dense(classes),
    )
    return Network("googlenet", sized_for, _input(sized_for), classes, body)


_INPUTS = {"mnist": (1, 28, 28), "cifar10": (3, 32, 32), "imagenet": (3, 224, 224)}
_CLASSES = {"mnist": 10, "cifar10": 10, "imagenet": 1000}


def _input(sized_for: str) -> Shape:
    return _INPUTS[sized_for]


def _classes(sized_for: str) -> int:
    return _CLASSES[sized_for]


def mlp(sized_for: str = "mnist") -> Network:
    """The Keras benchmarks' MLP (seed 001; keras/examples/mnist_mlp.py): 669,706 parameters."""
    body = _seq(Flatten(), Dense(512), ReLU(), Dropout(0.2), Dense(512), ReLU(), Dropout(0.2), Dense(10))
    return Network("mlp", sized_for, (1, 28, 28), 10, body)


def cifar10_cnn(sized_for: str = "cifar10") -> Network:
    """The Keras benchmarks' CNN (seed 001's "CNN"; keras/examples/cifar10_cnn.py): two blocks of two 3x3
    convolutions ("same", then unpadded), max-pooling and dropout, then a dense layer of 512; 1,250,858
    parameters."""
    def block(channels: int) -> tuple:
        return (Conv(channels, 3, padding=1), ReLU(), Conv(channels, 3), ReLU(), MaxPool(2, 2), Dropout(0.25))
    body = _seq(*block(32), *block(64), Flatten(), Dense(512), ReLU(), Dropout(0.5), Dense(10))
    return Network("cifar10_cnn", sized_for, (3, 32, 32), 10, body)


TEXT_STEPS, TEXT_CHARACTERS = 40, 60  # keras/examples/lstm_text_generation.py: 40 one-hot characters in


def lstm(sized_for: str = "text") -> Network:
    """The Keras benchmarks' LSTM (seed 001; keras/examples/lstm_text_generation.py): 128 units over 40
    one-hot characters, the next character's logits; 104,508 parameters."""
    body = _seq(LSTM(128), Dense(TEXT_CHARACTERS))
    return Network("lstm", sized_for, (TEXT_STEPS, TEXT_CHARACTERS), TEXT_CHARACTERS, body)


@dataclass(frozen=True)
class Optimizer:
    """How a network is trained, as its reference trained it; each backend builds its framework's own.
    sgd: v = momentum v + g, w -= rate v (classical momentum). rmsprop: s = rho s + (1 - rho) g²,
    w -= rate g / sqrt(s + epsilon) (Keras's form; frameworks that add epsilon after the root say so)."""

    kind: str  # sgd | rmsprop
    momentum: float = 0.9
    rho: float = 0.9
    epsilon: float = 1e-7


SGD_MOMENTUM = Optimizer("sgd")
RMSPROP = Optimizer("rmsprop", momentum=0.0)  # Keras's defaults, as the Keras benchmarks trained


@dataclass(frozen=True)
class Entry:
    """One row of the network registry."""

    describe: Any  # the dataset family it is sized for -> Network
    # Per dataset family it is sized for, the training parameters of the thesis's Figure 4.5
    # (of the Keras benchmarks for theirs): effective (global) batch size, iterations, learning rate.
    # Its keys are the network's sizings.
    figure_4_5: dict[str, tuple[int, int, float]]
    optimizer: Optimizer = SGD_MOMENTUM


# The one place a network is added (Figure 5.1 of the thesis: LeNet on MNIST only, the other four on
# CIFAR10 and ImageNet). config/schema.yaml, the run record's schema and config/README.md's Figure
# 4.5 table are checked against it (tests/unit/test_registry.py).
REGISTRY = {
    "lenet": Entry(lenet, {"mnist": (64, 938, 0.01)}),
    "alexnet": Entry(alexnet, {"cifar10": (128, 390, 0.01), "imagenet": (128, 300, 0.01)}),
    "resnet50": Entry(resnet50, {"cifar10": (128, 390, 0.1), "imagenet": (8, 300, 0.1)}),
    "googlenet": Entry(googlenet, {"cifar10": (128, 390, 0.1), "imagenet": (8, 300, 0.1)}),
    "vgg16": Entry(vgg16, {"cifar10": (128, 390, 0.01), "imagenet": (8, 300, 0.01)}),
    # seed 001's Keras benchmarks: one epoch of MNIST at batch 128, RMSprop at Keras's default rate
    "mlp": Entry(mlp, {"mnist": (128, 469, 0.001)}, RMSPROP),
    # the text-generation example's RMSprop rate; batch 32 as seed 001 ran it, 100 iterations
    "lstm": Entry(lstm, {"text": (32, 100, 0.01)}, RMSPROP),
    # seed 003's: batch 10, one epoch of CIFAR10; its rate is not given: ResNet's 0.1 at batch 128, scaled
    # down linearly and rounded (0.01)
    "resnet18": Entry(resnet18, {"cifar10": (10, 5000, 0.01), "imagenet": (10, 300, 0.01)}),
    # seed 004's, on ten ImageNet classes: AlexNet with batch norm at batch 128 (and 64), VGG-11 at batch 12. It
    # gives neither rate nor iterations: 0.01, and about an epoch of its ten classes (13,000 images) for AlexNet,
    # 400 iterations for VGG-11 (its figures' axis). CIFAR10: the thesis's values for AlexNet and VGG16.
    "alexnet_bn": Entry(alexnet_bn, {"cifar10": (128, 390, 0.01), "imagenet": (128, 100, 0.01)}),
    "vgg11": Entry(vgg11, {"cifar10": (128, 390, 0.01), "imagenet": (12, 400, 0.01)}),
    # seed 001's Keras benchmarks' CNN: batch 32 and RMSprop at 1e-4 as that example trains it (its decay of 1e-6
    # per step left out), one epoch of CIFAR10
    "cifar10_cnn": Entry(cifar10_cnn, {"cifar10": (32, 1562, 0.0001)}, RMSPROP),
}
NETWORKS = {name: entry.describe for name, entry in REGISTRY.items()}
SIZINGS = {name: tuple(entry.figure_4_5) for name, entry in REGISTRY.items()}


def optimizer(name: str) -> Optimizer:
    return REGISTRY[name].optimizer


def with_classes(description: Network, classes: int) -> Network:
    """The network with its last layer, a dense one, sized for ``classes`` (seed 003's ImageNet networks on
    ten-class datasets)."""
    *rest, last = description.body.layers
    if not isinstance(last, Dense):
        raise TypeError(f"{description.name} does not end in a dense layer")
    return replace(description, num_classes=classes, body=Sequential((*rest, Dense(classes, last.bias))))


def network(name: str, sized_for: str) -> Network:
    if name not in NETWORKS:
        raise KeyError(f"unknown network {name!r}; known: {', '.join(NETWORKS)}")
    if sized_for not in SIZINGS[name]:
        raise KeyError(f"{name} is not sized for {sized_for!r}; it is for: {', '.join(SIZINGS[name])}")
    return NETWORKS[name](sized_for)
