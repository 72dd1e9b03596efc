"""ONNX Runtime backend, inference only: the network as the PyTorch builder makes it, with PyTorch's
seeded weights, exported by ``torch.onnx`` (its dynamo exporter, the batch axis dynamic) and run by an
``InferenceSession`` (CPU, or CUDA with onnxruntime-gpu) on the PyTorch backend's input pipeline:
today's low-level reference for seed 002's question, in the place of its hand-written cuDNN."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import numpy as np
import onnxruntime
import torch

from .. import networks
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import GpuCode, Unavailable
from .pytorch import Batches, build, trainable_parameters  # noqa: F401 - the backend interface: PyTorch's network
from .pytorch import gpu_code as torch_gpu_code

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


def gpu_code() -> GpuCode | str:
    """The GPU code in the CUDA provider library's fatbinary (ONNX Runtime does not report what it was compiled
    for: 1.31.1's carries sm_75 to sm_120a kernels and no PTX) and the run's GPUs as torch sees them."""
    from ..envs import elf

    provider = Path(onnxruntime.__file__).parent / "capi" / "libonnxruntime_providers_cuda.so"
    if not provider.exists():
        return f"onnxruntime {onnxruntime.__version__} has no CUDA provider library ({provider.name})"
    return GpuCode.from_arch_names(f"onnxruntime {onnxruntime.__version__}", cuda_build(),
                                   elf.fatbin_architectures(provider), torch_gpu_code().gpus)


def export(model: torch.nn.Module, example: torch.Tensor, path: Path) -> None:
    """The model in evaluation mode as an ONNX graph taking any batch size."""
    torch.onnx.export(model.eval(), (example,), str(path), dynamo=True, input_names=[INPUT], output_names=[OUTPUT],
                      dynamic_shapes=({0: torch.export.Dim.DYNAMIC},), verbose=False)


@contextlib.contextmanager
def _stderr_kept():
    """What the process's C++ libraries write to its standard error meanwhile (ONNX Runtime logs there why a
    provider did not load), passed on to it and kept: a list of lines, filled when the block ends."""
    said = []
    with tempfile.TemporaryFile() as kept:
        saved = os.dup(2)
        os.dup2(kept.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            kept.seek(0)
            text = kept.read().decode(errors="replace")
            os.write(2, text.encode())
            said.extend(line for line in text.splitlines() if line.strip())


def session(path: Path, threads: int, gpus: int) -> onnxruntime.InferenceSession:
    """A session with every graph optimisation (ONNX Runtime's default) on the run's cores or its GPU. ONNX Runtime
    falls back to its CPU provider where the CUDA one cannot load (CUDA's libraries missing, a driver too old): a GPU
    run whose session is not CUDA's first is unavailable, with what ONNX Runtime said."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
    with _stderr_kept() as said:
        made = onnxruntime.InferenceSession(str(path), options, providers=[CUDA] if gpus else ["CPUExecutionProvider"])
    if gpus and made.get_providers()[0] != CUDA:
        raise Unavailable(f"onnxruntime {onnxruntime.__version__}'s session runs on {', '.join(made.get_providers())}, "
                          f"not {CUDA}: {said[-1] if said else 'ONNX Runtime said nothing'}")
    return made


def forward_shape(model: torch.nn.Module, images: np.ndarray) -> tuple:
    """The output shape of the exported model for float32 ``images`` in the description's layout."""
    with tempfile.TemporaryDirectory(prefix="dlbench-onnx-") as scratch:
        path = Path(scratch, "model.onnx")
        export(model, torch.from_numpy(images), path)
        return tuple(session(path, 1, 0).run(None, {INPUT: images})[0].shape)


class Harness:
    INFERENCE_IDIOM = "InferenceSession.run of the network exported by torch.onnx (CUDA: run_with_iobinding)"

    def __init__(self, spec: RunSpec, description: networks.Network):
        if spec.gpus and CUDA not in onnxruntime.get_available_providers():  # the CPU package
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
