"""TFRecord shards of ``tf.train.Example`` with the TF model garden's feature keys.

One file per shard, ``<shard>/data.tfrecord``; images are PNG (lossless, so a round trip is exact)
or JPEG for ILSVRC12; ``image/class/label`` is the 0-based class index. The ``tfrecord`` package
writes the framing (length, masked CRC32C) without TensorFlow.
"""
from __future__ import annotations

from pathlib import Path

import tfrecord
from tfrecord.reader import tfrecord_loader

from . import TFRECORD_FILE as FILE
from . import codec

FORMAT_NAMES = {"png": b"PNG", "jpeg": b"JPEG"}


def write_shard(records, directory: Path, shard) -> None:
    writer = tfrecord.TFRecordWriter(str(directory / FILE))
    for _, name, image, label in records:
        channels, height, width = image.shape
        writer.write({
            "image/encoded": (codec.encode(image, shard.encoding), "byte"),
            "image/format": (FORMAT_NAMES[shard.encoding], "byte"),
            "image/filename": (name.encode(), "byte"),
            "image/class/label": (label, "int"),
            "image/height": (height, "int"),
            "image/width": (width, "int"),
            "image/channels": (channels, "int"),
            "image/colorspace": (b"RGB" if channels == 3 else b"Grayscale", "byte"),
        })
    writer.close()


def read_shard(directory: Path):
    for example in tfrecord_loader(str(directory / FILE), None):
        yield codec.decode(example["image/encoded"]), int(example["image/class/label"][0])
