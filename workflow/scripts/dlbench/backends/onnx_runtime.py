"""ONNX Runtime backend, inference only: the network as the PyTorch builder makes it, with PyTorch's
seeded weights, exported by ``torch.onnx`` (its dynamo exporter, the batch axis dynamic) and run by an
``InferenceSession`` (CPU, or CUDA with onnxruntime-gpu) on the PyTorch backend's input pipeline:
today's low-level reference for seed 002's question, in the place of its hand-written cuDNN."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import onnxruntime
import torch

from .. import networks
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import Unavailable
from .pytorch import Batches, build, trainable_parameters  # noqa: F401 - the backend interface: PyTorch's network

PACKAGES = ("onnxruntime", "onnxruntime-gpu", "onnx", "onnxscript", "torch", "numpy")
INPUT, OUTPUT = "images", "logits"
CUDA = "CUDAExecutionProvider"


def framework_version() -> str:
    return onnxruntime.__version__


def cuda_build() -> str | None:
    """The CUDA onnxruntime-gpu was built for; None for the CPU package."""
    if CUDA not in onnxruntime.get_available_providers():
        return None
    from onnxruntime.capi import build_and_package_info

    return getattr(build_and_package_info, "cuda_version", None) or "(version not recorded)"


def gpu_code() -> str:
    return f"onnxruntime {onnxruntime.__version__} does not report the GPU architectures it was compiled for"


def export(model: torch.nn.Module, example: torch.Tensor, path: Path) -> None:
    """The model in evaluation mode as an ONNX graph taking any batch size."""
    torch.onnx.export(model.eval(), (example,), str(path), dynamo=True, input_names=[INPUT], output_names=[OUTPUT],
                      dynamic_shapes=({0: torch.export.Dim.DYNAMIC},), verbose=False)


def session(path: Path, threads: int, gpus: int) -> onnxruntime.InferenceSession:
    """A session with every graph optimisation (ONNX Runtime's default) on the run's cores or its GPU."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    return onnxruntime.InferenceSession(str(path), options,
                                        providers=[CUDA] if gpus else ["CPUExecutionProvider"])


def forward_shape(model: torch.nn.Module, images: np.ndarray) -> tuple:
    """The output shape of the exported model for float32 ``images`` in the description's layout."""
    with tempfile.TemporaryDirectory(prefix="dlbench-onnx-") as scratch:
        path = Path(scratch, "model.onnx")
        export(model, torch.from_numpy(images), path)
        return tuple(session(path, 1, 0).run(None, {INPUT: images})[0].shape)


class Harness:
    INFERENCE_IDIOM = "InferenceSession.run of the network exported by torch.onnx (CUDA: run_with_iobinding)"

    def __init__(self, spec: RunSpec, description: networks.Network):
        if spec.gpus and CUDA not in onnxruntime.get_available_providers():
            raise Unavailable(f"onnxruntime {onnxruntime.__version__} has no {CUDA} (the onnxruntime-gpu package)")
        torch.manual_seed(spec.seed)
        torch.set_num_threads(spec.threads)  # the export's
        model = build(description)
        # The PyTorch backend's batch on the CPU, NCHW as the exported graph takes it
        self.images = Batches(spec, description, torch.device("cpu")).next()[0].contiguous().numpy()
        self.scratch = tempfile.TemporaryDirectory(prefix="dlbench-onnx-")
        path = Path(self.scratch.name, "model.onnx")
        export(model, torch.from_numpy(self.images), path)
        self.session = session(path, spec.threads, spec.gpus)
        self.gpus = spec.gpus

    def inference(self, batch_size: int):
        images = self.images[:batch_size]
        if not self.gpus:
            def forward():
                self.session.run(None, {INPUT: images})  # returns the logits as NumPy
                return already_finished
            return forward
        # On the GPU the batch stays resident, as in the other frameworks: input and output bound on the device
        binding = self.session.io_binding()
        binding.bind_ortvalue_input(INPUT, onnxruntime.OrtValue.ortvalue_from_numpy(images, "cuda", 0))
        binding.bind_output(OUTPUT, "cuda")

        def forward_on_gpu():
            self.session.run_with_iobinding(binding)  # returns once its CUDA stream has finished
            return already_finished
        return forward_on_gpu

    def synchronize(self) -> None:
        pass  # every call finished before it returned

    def allocator_peak_mib(self) -> None:
        return None  # ONNX Runtime's arena keeps no peak that Python can read

    def input_wait_seconds(self) -> None:
        return None  # inference runs on a resident batch
