"""CUDA's libraries from PyPI's ``nvidia-*`` wheels, for a framework build that links them by name and
looks for them on the node (MXNet's ``mxnet-cu117``: CUDA 11.7, cuDNN 8, NCCL; Caffe's CUDA build).

PyTorch's, TensorFlow's and JAX's CUDA wheels find the ``nvidia-*`` wheels' libraries themselves (their
RPATH, or their own loader). ``libmxnet.so`` names ``libcudart.so.11.0``, ``libcublas.so.11``,
``libcudnn.so.8``, ... as NEEDED and finds none in the environment: :func:`preload` loads the wheels'
copies first, each after those it needs, so that the loader satisfies ``libmxnet.so``'s needs by their
names, with no ``LD_LIBRARY_PATH`` and nothing of the node's but the driver (``libcuda.so.1``). In an
environment without the wheels (a CPU build) it loads nothing.
"""
from __future__ import annotations

import ctypes
import sys
import sysconfig
from pathlib import Path

# Each after those it needs (cuBLAS: cuBLASLt; cuSOLVER: cuBLAS, cuSPARSE): in the nvidia-*-cu11 wheels
# that envs/mxnet.cuda.requirements.txt pins.
CUDA_11 = ("cuda_runtime/lib/libcudart.so.11.0", "cuda_nvrtc/lib/libnvrtc.so.11.2", "nvtx/lib/libnvToolsExt.so.1",
           "cublas/lib/libcublasLt.so.11", "cublas/lib/libcublas.so.11", "cufft/lib/libcufft.so.10",
           "curand/lib/libcurand.so.10", "cusparse/lib/libcusparse.so.11", "cusolver/lib/libcusolver.so.11",
           "cudnn/lib/libcudnn.so.8", "nccl/lib/libnccl.so.2")
# Caffe's CUDA build (dlbench.envs.caffe_build) links CUDA 13's runtime, cuBLAS and cuRAND from the nvidia-*
# wheels of envs/caffe.cuda.requirements.txt, which all install into nvidia/cu13/lib; the runtime first
# (caffe_build tells a CUDA environment by it).
CUDA_13_CAFFE = ("cu13/lib/libcudart.so.13", "cu13/lib/libcublasLt.so.13", "cu13/lib/libcublas.so.13",
                 "cu13/lib/libcurand.so.10")
PRELOADED = {"mxnet": CUDA_11, "caffe": CUDA_13_CAFFE}  # what each environment's backend loads before its framework


def wheels_directory(prefix: str = sys.prefix) -> Path:
    """Where the ``nvidia-*`` wheels install their libraries (``site-packages/nvidia``)."""
    return Path(sysconfig.get_path("purelib", vars={"base": prefix})) / "nvidia"


def preload(libraries: tuple[str, ...], directory: Path | None = None) -> list[Path]:
    """Load each of ``libraries`` (paths under the wheels' directory) that the environment has, globally;
    the paths loaded."""
    directory = directory or wheels_directory()
    found = [directory / library for library in libraries if (directory / library).exists()]
    for path in found:
        ctypes.CDLL(str(path), mode=ctypes.RTLD_GLOBAL)
    return found


def preloading(code: str, libraries: list[Path]) -> list[str]:
    """A child interpreter's arguments that run ``code`` once ``libraries`` are loaded, as :func:`preload` loads
    them (for a child that imports a framework whose CUDA build links them by name)."""
    return ["-c", "import ctypes, sys; [ctypes.CDLL(path, ctypes.RTLD_GLOBAL) for path in sys.argv[1:]]; " + code,
            *map(str, libraries)]


def preloaded(environment: str, directory: Path | None = None) -> list[Path]:
    """Where the libraries ``environment``'s backend loads before its framework would be (``make gpu-envs-check``
    preloads them so, for the dynamic loader's view)."""
    directory = directory or wheels_directory()
    return [directory / library for library in PRELOADED.get(environment, ())]
