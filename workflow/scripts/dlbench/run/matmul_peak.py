"""The dense matrix-product rate one device reaches in one precision: the ceiling that runs are compared with.

Started by :mod:`dlbench.run.ceiling` with the PyTorch environment's interpreter, on the device and
cores the ceiling job holds::

    python -m dlbench.run.matmul_peak PRECISION cpu|gpu RESULT.json

Standard library and torch only. The frameworks' layers reach the hardware through two kinds of library:
the BLAS (MKL or OpenBLAS on CPUs, cuBLAS on GPUs) for dense layers, and the convolution library (oneDNN on
CPUs, which uses AVX-512 where the BLAS may not; cuDNN on GPUs) for convolutions. Each :data:`KERNELS` runs
the same square product, ``2 n³`` FLOPs, over a sweep of sizes; each is repeated for a quarter of a second
at a time, and the best of all windows is the device's rate: the best a network could hope for, one large
product with nothing else to do. Every kernel and size tried is in the result.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from .. import files, lifeline

# Square sizes n of each product: the BLAS peaks near 1024-2048 on a CPU (196 GFLOP/s at 1024 here), and
# near 8192 on a GPU.
SIZES = {"cpu": (512, 1024, 2048), "gpu": (2048, 4096, 8192)}
WINDOW_S, WINDOWS = 0.25, 5


def _matrix_product(torch, n: int, dtype, device, generator):
    """``torch.mm`` of two n × n matrices: the BLAS."""
    a, b = (torch.randn(n, n, device=device, dtype=dtype, generator=generator) for _ in range(2))
    product = torch.empty_like(a)
    return lambda: torch.mm(a, b, out=product)


def _pointwise_convolution(torch, n: int, dtype, device, generator):
    """A 1×1 convolution of n channels into n over a batch of 16 images of n/16 pixels: the same product through
    the convolution library (PyTorch gives a 1×1 convolution of fewer images to the BLAS on one CPU thread)."""
    pixels = n // BATCH
    height = 2 ** ((pixels.bit_length() - 1) // 2)
    images = torch.randn(BATCH, n, height, pixels // height, device=device, dtype=dtype, generator=generator)
    weights = torch.randn(n, n, 1, 1, device=device, dtype=dtype, generator=generator)
    return lambda: torch.nn.functional.conv2d(images, weights)


BATCH = 16
KERNELS = {"torch.mm": _matrix_product, "conv2d 1x1": _pointwise_convolution}


def _rates(step, synchronize, flops: float, per_wait: int) -> list[float]:
    """TFLOP/s of each window of repeated ``step``s, after a first call (the library picks its kernel)."""
    step()
    synchronize()
    rates = []
    for _ in range(WINDOWS):
        count, start = 0, time.perf_counter()
        while True:
            for _ in range(per_wait):
                step()
            synchronize()
            count += per_wait
            elapsed = time.perf_counter() - start
            if elapsed >= WINDOW_S:
                break
        rates.append(flops * count / elapsed / 1e12)
    return rates


def tflops(precision: str, processor: str, sizes: tuple[int, ...] | None = None) -> dict:
    import torch

    # TF32 only where asked: cuDNN's convolutions would use it in fp32 by default.
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = precision == "tf32"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
    device = torch.device("cuda" if processor == "gpu" else "cpu")
    generator = torch.Generator(device).manual_seed(0)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    per_wait = 10 if device.type == "cuda" else 1  # products queued between waits: no launch gaps on a GPU
    tried = []
    with torch.no_grad():
        for kernel, build in KERNELS.items():
            for n in sizes or SIZES[processor]:
                rates = _rates(build(torch, n, dtype, device, generator), synchronize, 2 * n**3, per_wait)
                tried.append({"kernel": kernel, "size": n, "tflops": max(rates), "window_tflops": rates})
    best = max(tried, key=lambda found: found["tflops"])
    return {"tflops": best["tflops"], "kernel": best["kernel"], "size": best["size"], "kernels": tried,
            "dtype": str(dtype).removeprefix("torch."), "tf32": precision == "tf32",
            "framework": f"torch {torch.__version__}", "threads": torch.get_num_threads()}


def main(argv: list[str]) -> int:
    lifeline.watch()
    precision, processor, result = argv
    try:
        found = tflops(precision, processor)
    except ImportError as error:
        found = {"tflops": None,
                 "reason": f"the ceiling is measured with PyTorch, which cannot be imported here: {error}"}
    files.write_json(Path(result), found)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
