"""Lossless PNG for uint8 (C, H, W) images: grey for one channel, RGB for three (Pillow)."""
from __future__ import annotations

import io

import numpy as np
from PIL import Image


def encode(image: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    pixels = image[0] if image.shape[0] == 1 else image.transpose(1, 2, 0)
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def decode(data: bytes) -> np.ndarray:
    pixels = np.asarray(Image.open(io.BytesIO(data)))
    return pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)
