"""Each framework's native dataset format, written in shards from a dataset and read back.

| format   | consumers        | written with                                              |
|----------|------------------|-----------------------------------------------------------|
| lmdb     | Caffe, PyTorch   | ``lmdb`` + Caffe's ``Datum`` protobuf message             |
| tfrecord | TensorFlow       | ``tfrecord`` (tf.train.Example, masked CRC32C), Pillow    |
| recordio | MXNet            | ``mxnet.recordio`` (im2rec's .rec/.idx/.lst), OpenCV      |
| cntk     | CNTK             | Pillow image files, map files, OpenCV-XML mean file       |

A converted dataset is a directory ``data/<dataset>/<format>/`` holding one entry per shard,
``<split>-<index>-of-<count>/`` (as build_imagenet_data names its files), and a CONVERTED.json.
Records are stored in a stable shuffled order (convert_imageset --shuffle); shard ``i`` holds the
``i``-th contiguous slice of it, so every shard is an independent job. A shard is written into a
scratch directory renamed into place when complete: a failed or interrupted shard leaves nothing.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..backends import REGISTRY

# The formats each framework reads (thesis, section 4.5).
FRAMEWORK_FORMATS = {name: framework.data_format for name, framework in REGISTRY.items()}
MODULES = {"lmdb": "lmdb_datum", "tfrecord": "tfrecord_example", "recordio": "recordio_im2rec", "cntk": "cntk_map"}
# The framework environment a writer needs; the others run in the workflow's environment.
WRITER_ENVIRONMENTS = {"recordio": "mxnet"}
# Formats whose per-split files (CNTK's map and mean files) are joined from all shards at the end.
JOINED = {"cntk"}
SPLITS = ("train", "test")
# A TFRecord shard's one file; named here for TensorFlow's reader, whose environment lacks the writer's packages.
TFRECORD_FILE = "data.tfrecord"


def shuffled_order(count: int, seed: int) -> np.ndarray:
    """The stable shuffled order records are stored in (Caffe's convert_imageset --shuffle)."""
    return np.random.default_rng(seed).permutation(count)


@dataclass(frozen=True)
class Shard:
    """One independent piece of a conversion: the ``index``-th of ``count`` slices of a split."""

    format: str
    split: str
    index: int
    count: int
    encoding: str  # png | jpeg: the payload of the encoded formats (LMDB stores raw pixels)
    image_shape: tuple  # (C, H, W) the networks read: CNTK's mean file has this shape
    seed: int = 0

    @property
    def name(self) -> str:
        return shard_name(self.split, self.index, self.count)


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}"


def shard_dirs(directory: Path, split: str) -> list[Path]:
    return sorted(Path(directory).glob(f"{split}-*-of-*"))


@contextlib.contextmanager
def staged(output: Path):
    """Yield a scratch directory that becomes ``output`` only if the block completes."""
    output = Path(output)
    scratch = output.with_name(f".{output.name}.partial")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    try:
        yield scratch
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    shutil.rmtree(output, ignore_errors=True)
    scratch.rename(output)


class Progress:
    """Prints count, rate and ETA at most every few seconds; conversions of 1.28 M images take a while."""

    def __init__(self, total: int, label: str, log=print, every_s: float = 5.0):
        self.total, self.label, self.log, self.every_s = total, label, log, every_s
        self.started = self.last = time.monotonic()
        self.reported = 0

    def update(self, done: int) -> None:
        now = time.monotonic()
        if done > self.reported and (now - self.last >= self.every_s or done == self.total):
            self.reported = done
            rate = done / max(now - self.started, 1e-9)
            eta = (self.total - done) / rate if rate else float("inf")
            self.log(f"{self.label}: {done}/{self.total} images, {rate:,.0f} images/s, ETA {eta:,.0f} s")
            self.last = now

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.started


def module(format_name: str):
    """The format's reader/writer module, imported on demand (each needs its own libraries)."""
    return importlib.import_module(f"{__name__}.{MODULES[format_name]}")


class ArraySource:
    """A dataset held in memory as uint8 (N, C, H, W) arrays (MNIST, CIFAR10 and their stand-ins)."""

    def __init__(self, splits: dict):
        self.splits = splits  # split -> (images, labels)

    @classmethod
    def load(cls, family: str, data_dir: Path) -> ArraySource:
        from ..datasets import load_split

        return cls({split: load_split(family, data_dir, split) for split in SPLITS})

    def count(self, split: str) -> int:
        return len(self.splits[split][1])

    def record(self, split: str, index: int) -> tuple[str, np.ndarray, int]:
        images, labels = self.splits[split]
        return str(index), images[index], int(labels[index])


def write_shard(shard: Shard, source, output: Path, log=print) -> dict:
    """Write one shard of ``source`` (anything with ``count(split)`` and ``record(split, index)``
    giving (name, uint8 (C, H, W) image, label)) into ``output``: complete, or not at all."""
    order = shuffled_order(source.count(shard.split), shard.seed)
    positions = np.array_split(np.arange(len(order)), shard.count)[shard.index]
    progress = Progress(len(positions), f"{shard.format} {shard.name}", log)

    def records():
        for done, position in enumerate(positions, 1):
            yield (int(position), *source.record(shard.split, int(order[position])))
            progress.update(done)

    with staged(output) as scratch:
        module(shard.format).write_shard(records(), scratch, shard)
        stats = {**asdict(shard), "images": len(positions), "seconds": progress.seconds,
                 "images_per_second": len(positions) / max(progress.seconds, 1e-9)}
        (scratch / "SHARD.json").write_text(json.dumps(stats, indent=1))
    return stats


def link_shards(format_dir: Path, shards: list[Path]) -> None:
    """Relative links to shards written by their own jobs (ILSVRC12), so that the format's
    directory looks like one written whole."""
    for shard in shards:
        (Path(format_dir) / shard.name).symlink_to(os.path.relpath(shard, format_dir))


def finish(format_name: str, format_dir: Path, source: str) -> dict:
    """Per-split files built from all shards (CNTK's map and mean files) and CONVERTED.json."""
    format_dir = Path(format_dir)
    summary = {"format": format_name, "source": source, "splits": {}}
    for split in SPLITS:
        shards = shard_dirs(format_dir, split)
        stats = [json.loads((shard / "SHARD.json").read_text()) for shard in shards]
        if format_name in JOINED:
            module(format_name).join_split(format_dir, split, shards)
        seconds = sum(s["seconds"] for s in stats)
        images = sum(s["images"] for s in stats)
        summary["splits"][split] = {"shards": [shard.name for shard in shards], "images": images,
                                    "seconds": seconds, "images_per_second": images / max(seconds, 1e-9)}
    (format_dir / "CONVERTED.json").write_text(json.dumps(summary, indent=1))
    return summary["splits"]


def convert(format_name: str, family: str, data_dir: Path, output: Path, seed: int = 0, log=print) -> dict:
    """Both splits of an unpacked in-memory dataset into ``output``, one shard per split."""
    from ..datasets import FAMILIES

    source = ArraySource.load(family, data_dir)
    with staged(output) as scratch:
        for split in SPLITS:
            shard = Shard(format_name, split, 0, 1, FAMILIES[family].encoding, FAMILIES[family].image_shape, seed)
            write_shard(shard, source, scratch / shard.name, log)
        return finish(format_name, scratch, str(data_dir))


def read_split(format_name: str, directory: Path, split: str):
    """Yield (uint8 (C, H, W) image, label) from every shard of ``split`` in stored order."""
    reader = module(format_name)
    for shard in shard_dirs(directory, split):
        yield from reader.read_shard(shard)
