"""cuDNN called directly, inference only: seed 002's hand-written cuDNN LeNet. The network as the PyTorch builder
makes it, with PyTorch's seeded weights, run by cuDNN's own C API — the library PyTorch's CUDA build carries —
called through ctypes on PyTorch's CUDA tensors: ``cudnnConvolutionForward`` (then ``cudnnAddTensor`` for its
bias), ``cudnnActivationForward``, ``cudnnPoolingForward``, ``cudnnBatchNormalizationForwardInference``. A dense
layer is the convolution whose kernel covers its whole input (an inner product over an NCHW tensor is exactly
that), so no call outside cuDNN is made. Per batch size, the descriptors, each convolution's algorithm
(``cudnnFindConvolutionForwardAlgorithmEx``: measured on the run's buffers, as PyTorch's
``cudnn.benchmark``), workspaces and outputs
are set up once, before the timed calls. NVIDIA GPUs only: a CPU run is unavailable, saying so."""
from __future__ import annotations

import ctypes

import torch

from .. import networks
from ..spec import RunSpec
from . import Unavailable, require_gpus
from .pytorch import (  # noqa: F401 - the backend interface: PyTorch's network and build
    Batches,
    TorchBuilder,
    build,
    cuda_build,
    forward_shape,
    gpu_allocator_peak_mib,
    gpu_code,
    trainable_parameters,
)

PACKAGES = ("torch", "nvidia-cudnn-cu13", "nvidia-cudnn-cu12", "numpy")
# cuDNN's enumerations (cudnn_graph.h, cudnn_ops.h, cudnn_cnn.h)
NCHW, FLOAT, CROSS_CORRELATION, PROPAGATE_NAN, RELU, MAX_POOLING, AVERAGE_POOLING, SPATIAL = 0, 0, 1, 1, 1, 0, 1, 1
# fp32: FMA instructions alone; tf32: cuDNN's default, which lets Ampere and later GPUs use TF32 tensor cores
# (what PyTorch's cudnn.allow_tf32 switches between)
MATH = {"fp32": 3, "tf32": 0}
ONE, ZERO = ctypes.byref(ctypes.c_float(1.0)), ctypes.byref(ctypes.c_float(0.0))
# The workspace the algorithm search may use: cudnnFindConvolutionForwardAlgorithm allocates its own, up to tens of
# GiB (38 GiB for AlexNet-BN on an H200), which would be the run's GPU memory peak; PyTorch's search too is bounded.
FIND_WORKSPACE_MIB = 256


def version() -> tuple[int, int, int] | None:
    """The cuDNN PyTorch loaded (it loads it here), as (major, minor, patch); None where it has none."""
    number = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    if not number:
        return None
    unit = 10000 if number >= 90000 else 1000  # cuDNN 9 numbers its versions MAJOR*10000 + MINOR*100 + PATCH
    return number // unit, number % unit // 100, number % 100


def framework_version() -> str | None:
    found = version()
    return ".".join(map(str, found)) if found else None


def pointer(tensor: torch.Tensor) -> ctypes.c_void_p:
    return ctypes.c_void_p(tensor.data_ptr())


class AlgorithmPerformance(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float),
                ("memory", ctypes.c_size_t), ("determinism", ctypes.c_int), ("math_type", ctypes.c_int),
                ("reserved", ctypes.c_int * 3)]


class Library:
    """cuDNN's C API on PyTorch's current CUDA stream: a handle, descriptors, and each call's status checked."""

    def __init__(self):
        found = version()
        if found is None:
            raise Unavailable(f"torch {torch.__version__} has no cuDNN")
        self.version = ".".join(map(str, found))
        try:  # the library PyTorch has just loaded, found by its soname
            self.lib = ctypes.CDLL(f"libcudnn.so.{found[0]}")
        except OSError as error:
            raise Unavailable(f"cuDNN {self.version}'s library cannot be loaded: {error}") from error
        self.lib.cudnnGetErrorString.restype = ctypes.c_char_p
        self.handle = self.made("cudnnCreate")
        self("cudnnSetStream", self.handle, ctypes.c_void_p(torch.cuda.current_stream().cuda_stream))

    def __call__(self, function: str, *arguments) -> None:
        try:
            call = getattr(self.lib, function)
        except AttributeError as error:
            raise Unavailable(f"cuDNN {self.version} has no {function}") from error
        status = call(*arguments)
        if status:
            raise RuntimeError(f"{function}: {self.lib.cudnnGetErrorString(status).decode()} (status {status})")

    def made(self, create: str, set_up: str | None = None, *arguments) -> ctypes.c_void_p:
        """A handle or descriptor that ``create`` makes and, given, ``set_up`` sets with ``arguments``."""
        made = ctypes.c_void_p()
        self(create, ctypes.byref(made))
        if set_up:
            self(set_up, made, *arguments)
        return made

    def tensor(self, shape: tuple) -> ctypes.c_void_p:
        """A descriptor of a float32 NCHW tensor of ``shape`` (n, c, h, w)."""
        return self.made("cudnnCreateTensorDescriptor", "cudnnSetTensor4dDescriptor", NCHW, FLOAT,
                         *map(ctypes.c_int, shape))

    def output_shape(self, query: str, *descriptors) -> tuple:
        """The (n, c, h, w) that cuDNN's ``query`` (an operation's ``...ForwardOutputDim``) gives its output."""
        shape = [ctypes.c_int() for _ in range(4)]
        self(query, *descriptors, *map(ctypes.byref, shape))
        return tuple(size.value for size in shape)

    def close(self) -> None:
        self("cudnnDestroy", self.handle)


class Convolution:
    """``y = conv(x, weight) + bias``. A dense layer (``whole_input``) takes the shape of its input at planning: an
    inner product over an NCHW tensor is the convolution whose kernel is that whole tensor."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, stride: int, padding: int, math: int,
                 whole_input: bool = False):
        self.weight, self.bias, self.stride, self.padding, self.math = weight, bias, stride, padding, math
        self.whole_input = whole_input

    def plan(self, cudnn: Library, shape: tuple):
        weight = self.weight.detach()
        if self.whole_input:
            weight = weight.reshape(weight.shape[0], *shape[1:]).contiguous()
        source = cudnn.tensor(shape)
        kernel = cudnn.made("cudnnCreateFilterDescriptor", "cudnnSetFilter4dDescriptor", FLOAT, NCHW,
                            *map(ctypes.c_int, weight.shape))
        convolution = cudnn.made("cudnnCreateConvolutionDescriptor", "cudnnSetConvolution2dDescriptor",
                                 *map(ctypes.c_int, (self.padding, self.padding, self.stride, self.stride, 1, 1,
                                                     CROSS_CORRELATION, FLOAT)))
        cudnn("cudnnSetConvolutionMathType", convolution, self.math)
        out = cudnn.output_shape("cudnnGetConvolution2dForwardOutputDim", convolution, source, kernel)
        target, result = cudnn.tensor(out), torch.empty(out, device=weight.device)
        algorithm, size = self._fastest(cudnn, (source, torch.zeros(shape, device=weight.device)), (kernel, weight),
                                        convolution, (target, result))
        workspace = torch.empty(size.value, dtype=torch.uint8, device=weight.device)
        bias = None if self.bias is None else (cudnn.tensor((1, out[1], 1, 1)), self.bias.detach())

        def run(images: torch.Tensor) -> torch.Tensor:
            cudnn("cudnnConvolutionForward", cudnn.handle, ONE, source, pointer(images), kernel, pointer(weight),
                  convolution, algorithm, pointer(workspace), size, ZERO, target, pointer(result))
            if bias:
                cudnn("cudnnAddTensor", cudnn.handle, ONE, bias[0], pointer(bias[1]), ONE, target, pointer(result))
            return result
        return run, out

    @staticmethod
    def _fastest(cudnn: Library, source, kernel, convolution, target) -> tuple[int, ctypes.c_size_t]:
        """The algorithm cuDNN measures fastest for these shapes within FIND_WORKSPACE_MIB (it times each on the
        GPU, on these buffers), and the workspace it needs."""
        results, returned = (AlgorithmPerformance * 8)(), ctypes.c_int()
        scratch = torch.empty(FIND_WORKSPACE_MIB * 2**20, dtype=torch.uint8, device=target[1].device)
        cudnn("cudnnFindConvolutionForwardAlgorithmEx", cudnn.handle, source[0], pointer(source[1]), kernel[0],
              pointer(kernel[1]), convolution, target[0], pointer(target[1]), 8, ctypes.byref(returned), results,
              pointer(scratch), ctypes.c_size_t(scratch.numel()))
        usable = [result for result in results[:returned.value] if result.status == 0]
        if not usable:
            raise Unavailable(f"cuDNN {cudnn.version} has no forward algorithm for this convolution")
        return usable[0].algo, ctypes.c_size_t(usable[0].memory)


class Activation:
    def plan(self, cudnn: Library, shape: tuple):
        relu = cudnn.made("cudnnCreateActivationDescriptor", "cudnnSetActivationDescriptor", RELU, PROPAGATE_NAN,
                          ctypes.c_double(0.0))
        tensor = cudnn.tensor(shape)

        def run(x: torch.Tensor) -> torch.Tensor:  # in place, as cuDNN allows
            cudnn("cudnnActivationForward", cudnn.handle, relu, ONE, tensor, pointer(x), ZERO, tensor, pointer(x))
            return x
        return run, shape


class Pooling:
    """Max pooling of the description's window, or (``window`` None) the average over the whole input."""

    def __init__(self, layer: networks.MaxPool | None):
        if layer is not None and layer.ceil_mode:
            raise Unavailable("cuDNN's pooling rounds its output size down: a pooling with ceil_mode has no call")
        self.layer = layer

    def plan(self, cudnn: Library, shape: tuple):
        layer = self.layer
        mode, window, padding, stride = ((MAX_POOLING, layer.kernel, layer.padding, layer.stride) if layer else
                                         (AVERAGE_POOLING, shape[2], 0, shape[2]))
        if layer is None and shape[2] != shape[3]:
            raise Unavailable(f"global average pooling over a {shape[2]}x{shape[3]} input")
        pooling = cudnn.made("cudnnCreatePoolingDescriptor", "cudnnSetPooling2dDescriptor", mode, PROPAGATE_NAN,
                             *map(ctypes.c_int, (window, window, padding, padding, stride, stride)))
        source = cudnn.tensor(shape)
        out = cudnn.output_shape("cudnnGetPooling2dForwardOutputDim", pooling, source)
        target = cudnn.tensor(out)
        result = torch.empty(out, device="cuda")

        def run(x: torch.Tensor) -> torch.Tensor:
            cudnn("cudnnPoolingForward", cudnn.handle, pooling, ONE, source, pointer(x), ZERO, target, pointer(result))
            return result
        return run, out


class BatchNorm:
    """Inference: the running statistics PyTorch's layer keeps."""

    def __init__(self, module: torch.nn.modules.batchnorm._BatchNorm):
        self.module = module

    def plan(self, cudnn: Library, shape: tuple):
        module = self.module
        tensor, statistics = cudnn.tensor(shape), cudnn.tensor((1, shape[1], 1, 1))
        result = torch.empty(shape, device="cuda")
        weights = [tensor.detach() for tensor in (module.weight, module.bias, module.running_mean, module.running_var)]

        def run(x: torch.Tensor) -> torch.Tensor:
            cudnn("cudnnBatchNormalizationForwardInference", cudnn.handle, SPATIAL, ONE, ZERO, tensor, pointer(x),
                  tensor, pointer(result), statistics, *map(pointer, weights), ctypes.c_double(module.eps))
            return result
        return run, shape


class Identity:
    """Flatten (an NCHW tensor is already laid out flat) and dropout (off in inference)."""

    def plan(self, cudnn: Library, shape: tuple):
        return (lambda x: x), shape


class Chain:
    def __init__(self, layers: list):
        self.layers = layers

    def plan(self, cudnn: Library, shape: tuple):
        runs = []
        for layer in self.layers:
            run, shape = layer.plan(cudnn, shape)
            runs.append(run)
        return networks.in_sequence(runs), shape


class CallBuilder:
    """A description as cuDNN calls on the weights of PyTorch's build of it, whose leaves (``Named``'s, in walk
    order) it takes one by one."""

    def __init__(self, modules, math: int):
        self.modules, self.math = iter(modules), math

    def conv(self, layer, shape):
        module = next(self.modules)
        return Convolution(module.weight, module.bias, layer.stride, layer.padding, self.math)

    def dense(self, layer, shape):
        module = next(self.modules)
        return Convolution(module.weight, module.bias, 1, 0, self.math, whole_input=True)

    def batchnorm(self, layer, shape):
        return BatchNorm(next(self.modules))

    def relu(self, layer, shape):
        next(self.modules)
        return Activation()

    def maxpool(self, layer, shape):
        next(self.modules)
        return Pooling(layer)

    def globalavgpool(self, layer, shape):
        next(self.modules)
        return Pooling(None)

    def flatten(self, layer, shape):
        next(self.modules)
        return Identity()

    dropout = flatten

    def sequential(self, children):
        return Chain(children)

    def lstm(self, layer, shape):
        raise Unavailable("cuDNN's RNN calls are not written here: the hand-written network is convolutional")

    def concat(self, branches):
        raise Unavailable("branches (Concat) are not written in cuDNN calls here: a network of one path runs")

    def residual(self, body, shortcut):
        raise Unavailable("residual blocks are not written in cuDNN calls here: a network of one path runs")


class Network:
    """The description's network in cuDNN calls, on the weights of ``model``'s leaves (PyTorch's build, the
    description's layer names in walk order)."""

    def __init__(self, description: networks.Network, leaves: dict, precision: str):
        self.description = description
        self.root = networks.build(description, CallBuilder(leaves.values(), MATH[precision]))

    def plan(self, cudnn: Library, batch_size: int):
        """The forward pass of NCHW float32 CUDA images, ``batch_size`` at a time: a function that returns the
        logits (batch, classes); its descriptors, algorithms and buffers made now."""
        forward, shape = self.root.plan(cudnn, (batch_size, *self.description.input_shape))
        if shape != (batch_size, self.description.num_classes, 1, 1):
            raise ValueError(f"{self.description.name}: the calls' output is {shape}")
        return lambda images: forward(images.contiguous()).view(batch_size, -1)


class Harness:
    INFERENCE_IDIOM = ("cuDNN's C API called through ctypes (cudnnConvolutionForward, cudnnAddTensor, "
                       "cudnnActivationForward, cudnnPoolingForward), set up once per batch size")

    def __init__(self, spec: RunSpec, description: networks.Network):
        if not spec.gpus:
            raise Unavailable("cuDNN runs on NVIDIA GPUs: a CPU run has no cuDNN to call")
        if spec.gpus > 1:
            raise Unavailable(f"the hand-written cuDNN network runs on one GPU, not {spec.gpus}")
        require_gpus(spec, 1, torch.cuda.device_count(), f"torch {torch.__version__}")
        torch.manual_seed(spec.seed)
        self.device = torch.device("cuda", 0)
        named = networks.Named(TorchBuilder())  # PyTorch's network and seeded weights, its leaves by name
        networks.build(description, named)
        for module in named.leaves.values():
            module.to(self.device).eval()
        self.cudnn = Library()
        self.network = Network(description, named.leaves, spec.precision)
        self.images = Batches(spec, description, self.device).next()[0].contiguous()  # PyTorch's batch, NCHW
        self.output = None

    def inference(self, batch_size: int):
        images, forward = self.images[:batch_size], self.network.plan(self.cudnn, batch_size)

        def call():
            self.output = forward(images)
            return torch.cuda.synchronize
        return call

    def synchronize(self) -> None:
        torch.cuda.synchronize(self.device)

    def allocator_peak_mib(self) -> float:
        return gpu_allocator_peak_mib([self.device])  # weights, activations and workspaces are PyTorch's tensors

    def input_wait_seconds(self) -> None:
        return None  # inference runs on a resident batch

    def close(self) -> None:
        self.cudnn.close()
