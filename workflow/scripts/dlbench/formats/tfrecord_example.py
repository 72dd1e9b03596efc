"""TFRecord shards of ``tf.train.Example`` with the TF model garden's feature keys.

Images are PNG-encoded (lossless, so a round trip is exact); ``image/class/label`` is the
0-based class index. Shards are named ``<split>-00000-of-00004`` as build_imagenet_data does.
The ``tfrecord`` package writes the framing (length, masked CRC32C) without TensorFlow.
"""
from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import tfrecord
from PIL import Image
from tfrecord.reader import tfrecord_loader

from . import Progress, shuffled_order

SHARDS = {"train": 4, "test": 1}


def encode_png(image: np.ndarray) -> bytes:
    """uint8 (C, H, W) -> PNG bytes (grey for one channel, RGB for three)."""
    buffer = io.BytesIO()
    pixels = image[0] if image.shape[0] == 1 else image.transpose(1, 2, 0)
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=1)
    return buffer.getvalue()


def decode_png(data: bytes) -> np.ndarray:
    pixels = np.asarray(Image.open(io.BytesIO(data)))
    return pixels[None] if pixels.ndim == 2 else pixels.transpose(2, 0, 1)


def shard_names(split: str) -> list[str]:
    count = SHARDS[split]
    return [f"{split}-{index:05d}-of-{count:05d}" for index in range(count)]


def write_split(images: np.ndarray, labels: np.ndarray, directory: Path, split: str, seed: int,
                progress: Progress) -> None:
    count, channels, height, width = images.shape
    order = shuffled_order(count, seed)
    done = 0
    for name, chunk in zip(shard_names(split), np.array_split(order, SHARDS[split])):
        writer = tfrecord.TFRecordWriter(str(directory / name))
        for index in chunk:
            writer.write({
                "image/encoded": (encode_png(images[index]), "byte"),
                "image/format": (b"PNG", "byte"),
                "image/class/label": (int(labels[index]), "int"),
                "image/height": (height, "int"),
                "image/width": (width, "int"),
                "image/channels": (channels, "int"),
                "image/colorspace": (b"RGB" if channels == 3 else b"Grayscale", "byte"),
            })
            done += 1
            if done % 5_000 == 0:
                progress.update(done)
        writer.close()


def read_split(directory: Path, split: str):
    for name in shard_names(split):
        for example in tfrecord_loader(str(directory / name), None):
            yield decode_png(example["image/encoded"]), int(example["image/class/label"][0])
