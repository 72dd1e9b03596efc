"""TFRecord shards of ``tf.train.Example`` with the TF model garden's feature keys.

Images are PNG-encoded (lossless, so a round trip is exact); ``image/class/label`` is the
0-based class index. Shards are named ``<split>-00000-of-00004`` as build_imagenet_data does.
The ``tfrecord`` package writes the framing (length, masked CRC32C) without TensorFlow.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import tfrecord
from tfrecord.reader import tfrecord_loader

from . import Progress, png, shuffled_order

SHARDS = {"train": 4, "test": 1}


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
                "image/encoded": (png.encode(images[index]), "byte"),
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
            yield png.decode(example["image/encoded"]), int(example["image/class/label"][0])
