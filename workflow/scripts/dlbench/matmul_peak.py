"""The dense matrix-product rate one device reaches in one precision: the ceiling MFU divides by.

Started by :mod:`dlbench.ceiling` with the PyTorch environment's interpreter, on the device and
cores the ceiling job holds::

    python -m dlbench.matmul_peak PRECISION cpu|gpu RESULT.json

Standard library and torch only. A square product of ``SIZE`` is repeated for a quarter of a
second at a time; the best of the windows is the device's rate, as the best a network could hope
for: one large product with nothing else to do.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from . import files, lifeline

SIZE = {"cpu": 1024, "gpu": 8192}  # where the BLAS reaches its peak (CPU here: 196 GFLOP/s at 1024, 190 at 2048)
WINDOW_S, WINDOWS = 0.25, 5


def tflops(precision: str, processor: str, size: int | None = None) -> dict:
    import torch

    size = size or SIZE[processor]
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision, torch.float32)
    device = torch.device("cuda" if processor == "gpu" else "cpu")
    generator = torch.Generator(device).manual_seed(0)
    a, b = (torch.randn(size, size, device=device, dtype=dtype, generator=generator) for _ in range(2))
    product = torch.empty_like(a)
    synchronize = torch.cuda.synchronize if device.type == "cuda" else lambda: None
    per_wait = 10 if device.type == "cuda" else 1  # products queued between waits: no launch gaps on a GPU
    torch.mm(a, b, out=product)  # the library picks its kernel on the first call
    synchronize()
    rates = []
    for _ in range(WINDOWS):
        count, start = 0, time.perf_counter()
        while True:
            for _ in range(per_wait):
                torch.mm(a, b, out=product)
            synchronize()
            count += per_wait
            elapsed = time.perf_counter() - start
            if elapsed >= WINDOW_S:
                break
        rates.append(2 * size**3 * count / elapsed / 1e12)
    return {"tflops": max(rates), "window_tflops": rates, "size": size, "dtype": str(dtype).removeprefix("torch."),
            "tf32": precision == "tf32", "framework": f"torch {torch.__version__}",
            "threads": torch.get_num_threads()}


def main(argv: list[str]) -> int:
    lifeline.watch()
    precision, processor, result = argv
    try:
        found = tflops(precision, processor)
    except ImportError as error:
        found = {"tflops": None, "reason": f"the ceiling is measured with PyTorch, which cannot be imported here: {error}"}
    files.write_json(Path(result), found)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
