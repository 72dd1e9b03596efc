"""Each framework's native dataset format, written from an unpacked dataset and read back.

| format   | consumers        | written with                                   |
|----------|------------------|------------------------------------------------|
| lmdb     | Caffe, PyTorch   | ``lmdb`` + Caffe's ``Datum`` protobuf message  |
| tfrecord | TensorFlow       | ``tfrecord`` (tf.train.Example, masked CRC32C) |
| cntk     | CNTK             | Pillow PNGs, map files, OpenCV-XML mean file   |

A converter writes into a temporary directory beside its output and renames it into place
when complete, so an interrupted or failed conversion leaves no partial output behind.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import shutil
import time
from pathlib import Path

import numpy as np

# The formats each framework reads (thesis, section 4.5). RecordIO arrives with the MXNet backend.
FRAMEWORK_FORMATS = {"caffe": "lmdb", "pytorch": "lmdb", "tensorflow": "tfrecord", "cntk": "cntk"}
MODULES = {"lmdb": "lmdb_datum", "tfrecord": "tfrecord_example", "cntk": "cntk_map"}
SPLITS = ("train", "test")


def shuffled_order(count: int, seed: int) -> np.ndarray:
    """The stable shuffled order records are stored in (Caffe's convert_imageset --shuffle)."""
    return np.random.default_rng(seed).permutation(count)


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


def convert(format_name: str, family: str, data_dir: Path, output: Path, seed: int = 0, log=print) -> dict:
    """Both splits of an unpacked dataset into ``output`` (complete, or not at all)."""
    from ..datasets import load_split

    writer, stats = module(format_name), {}
    with staged(output) as scratch:
        for split in SPLITS:
            images, labels = load_split(family, data_dir, split)
            progress = Progress(len(images), f"{format_name} {output.parent.name}/{split}", log)
            writer.write_split(images, labels, scratch, split, seed, progress)
            progress.update(len(images))
            stats[split] = {"images": len(images), "seconds": progress.seconds,
                            "images_per_second": len(images) / progress.seconds}
        (scratch / "CONVERTED.json").write_text(json.dumps(
            {"format": format_name, "source": str(data_dir), "seed": seed, "splits": stats}, indent=1))
    return stats
