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

Each shard's SHARD.json records what its conversion wrote: the image count, and each file's size,
SHA-256 and modification time (CONVERTED.json the same of the per-split files joined from them).
:func:`damage` checks a converted dataset against them before a run reads it: sizes always (a
truncated file), checksums where a file was modified since; a damaged shard is the run's failure,
naming it and how to convert it again (:class:`DamagedShard`). Python readers check the counts.
"""
from __future__ import annotations

import functools
import hashlib
import importlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .. import files
from ..registry import REGISTRY

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
# A RecordIO shard's files, as im2rec names them; named here for the thesis's MXNet, read in its worker.
RECORDIO_REC, RECORDIO_IDX, RECORDIO_LST = "data.rec", "data.idx", "data.lst"
SHARD_RECORD, CONVERTED_RECORD = "SHARD.json", "CONVERTED.json"
# Files a reader rewrites, left out of what a conversion records: LMDB's reader lock table.
UNRECORDED = frozenset({"lock.mdb", ".snakemake_timestamp"})


class DamagedShard(ValueError):
    """A converted dataset no longer holds what its conversion wrote."""


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
    digest = hashlib.sha256()  # of the records as written: the shard's data, whatever bytes its format adds

    def records():
        for done, position in enumerate(positions, 1):
            name, image, label = source.record(shard.split, int(order[position]))
            digest.update(f"{position} {name} {label} {image.dtype} {image.shape}\n".encode() + image.tobytes())
            yield int(position), name, image, label
            progress.update(done)

    with files.staged_directory(output) as scratch:
        module(shard.format).write_shard(records(), scratch, shard)
        stats = {**asdict(shard), "images": len(positions), "seconds": progress.seconds,
                 "images_per_second": len(positions) / max(progress.seconds, 1e-9),
                 "records_sha256": digest.hexdigest(), "files": written_files(scratch, recursive=True)}
        (scratch / SHARD_RECORD).write_text(json.dumps(stats, indent=1))
    return stats


def file_facts(path: Path) -> dict:
    """What a conversion records of a file it wrote, and a check compares."""
    with open(path, "rb") as file:
        digest = hashlib.file_digest(file, "sha256").hexdigest()
    info = os.stat(path)
    return {"bytes": info.st_size, "sha256": digest, "mtime_ns": info.st_mtime_ns}


def written_files(directory: Path, recursive: bool = False) -> dict:
    """Each file under ``directory`` (path relative to it), but the records and :data:`UNRECORDED`."""
    found = directory.rglob("*") if recursive else directory.iterdir()
    return {str(path.relative_to(directory)): file_facts(path) for path in sorted(found)
            if path.is_file() and path.name not in UNRECORDED | {SHARD_RECORD, CONVERTED_RECORD}}


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
        stats = [json.loads((shard / SHARD_RECORD).read_text()) for shard in shards]
        if format_name in JOINED:
            module(format_name).join_split(format_dir, split, shards)
        seconds = sum(s["seconds"] for s in stats)
        images = sum(s["images"] for s in stats)
        summary["splits"][split] = {"shards": [shard.name for shard in shards], "images": images,
                                    "seconds": seconds, "images_per_second": images / max(seconds, 1e-9)}
    summary["files"] = written_files(format_dir)  # the per-split files joined from the shards
    (format_dir / CONVERTED_RECORD).write_text(json.dumps(summary, indent=1))
    return summary["splits"]


def convert(format_name: str, family: str, data_dir: Path, output: Path, seed: int = 0, log=print) -> dict:
    """Both splits of an unpacked in-memory dataset into ``output``, one shard per split."""
    from ..datasets import FAMILIES

    source = ArraySource.load(family, data_dir)
    with files.staged_directory(output) as scratch:
        for split in SPLITS:
            shard = Shard(format_name, split, 0, 1, FAMILIES[family].encoding, FAMILIES[family].image_shape, seed)
            write_shard(shard, source, scratch / shard.name, log)
        return finish(format_name, scratch, str(data_dir))


def read_split(format_name: str, directory: Path, split: str):
    """Yield (uint8 (C, H, W) image, label) from every shard of ``split`` in stored order; a shard that
    holds fewer or more images than its conversion wrote is :class:`DamagedShard`."""
    reader = module(format_name)
    for shard in shard_dirs(directory, split):
        read = 0
        try:
            for read, item in enumerate(reader.read_shard(shard), 1):
                yield item
        except DamagedShard:
            raise
        except Exception as error:  # the format's library on bytes it cannot parse (lmdb.PageNotFoundError, ...)
            raise unreadable_shard(shard, error) from error
        check_count(shard, read)


def unreadable_shard(shard: Path, error: Exception) -> DamagedShard:
    """What a reader that failed on ``shard``'s bytes raises: the shard, the library's error, and how to convert
    it again."""
    return DamagedShard(f"{shard}: reading it failed ({type(error).__name__}: {error}): the data is damaged; "
                        f"{reconvert_advice([reconvert_target(shard)])}")


def check_count(shard: Path, read: int) -> None:
    """Refuse a shard whose reader found another number of images than its conversion wrote."""
    written = json.loads((shard / SHARD_RECORD).read_text())["images"]
    if read != written:
        raise DamagedShard(f"{shard}: {read} images read, its conversion wrote {written}; "
                           f"{reconvert_advice([reconvert_target(shard)])}")


def damage(format_dir: Path, checksums: bool = True, every_file: bool = False) -> dict[Path, list[str]]:
    """What in a converted dataset no longer matches what its conversion wrote, by what converts it again
    (:func:`reconvert_target`); empty where all matches. Sizes are compared always; with ``checksums``,
    the SHA-256 of each file modified since, or with ``every_file`` of every file (a byte changed in place, its date
    set back, shows in nothing else). A shard converted before its files were recorded is unchecked."""
    format_dir = Path(format_dir)
    found: dict[Path, list[str]] = {}
    if not format_dir.exists():
        return found  # nothing converted there (the run says so), nothing damaged
    try:
        converted = json.loads((format_dir / CONVERTED_RECORD).read_text())
    except (OSError, ValueError) as error:
        return {format_dir: [f"{format_dir / CONVERTED_RECORD} unreadable ({error})"]}
    problems = _file_damage(format_dir, converted.get("files", {}), checksums, every_file)
    if problems:
        found[format_dir] = problems
    for facts in converted["splits"].values():
        for name in facts["shards"]:
            shard = format_dir / name
            try:
                written = json.loads((shard / SHARD_RECORD).read_text())
            except (OSError, ValueError) as error:
                problems = [f"{shard / SHARD_RECORD} unreadable ({error})"]
            else:
                problems = _file_damage(shard, written.get("files", {}), checksums, every_file)
            if problems:
                found.setdefault(reconvert_target(shard), []).extend(problems)
    return found


def _file_damage(directory: Path, written: dict, checksums: bool, every_file: bool) -> list[str]:
    problems = []
    for name, facts in written.items():
        path = directory / name
        try:
            info = os.stat(path)
        except OSError as error:
            problems.append(f"{path}: {error.strerror}")
            continue
        modified = info.st_mtime_ns != facts["mtime_ns"]
        if info.st_size != facts["bytes"]:
            problems.append(f"{path} has {info.st_size:,} bytes, its conversion wrote {facts['bytes']:,}")
        elif checksums and (modified or every_file) and file_facts(path)["sha256"] != facts["sha256"]:
            problems.append(f"{path} was modified after its conversion (its SHA-256 differs)" if modified else
                            f"{path} is not what its conversion wrote (its SHA-256 differs; its size and date match)")
    return problems


def reconvert_target(shard: Path) -> Path:
    """What converts ``shard`` again: its own job's output where it is one (ILSVRC12's, linked into the
    format's directory), else the whole format's directory."""
    shard = Path(shard)
    return Path(os.path.relpath(os.path.realpath(shard))) if shard.is_symlink() else shard.parent


def reconvert_advice(targets) -> str:
    forced = " ".join(str(target) for target in targets)
    return f"convert it again: snakemake --force {forced}; then a plain snakemake run reruns the runs that read it"


def check(format_dir: Path, every_file: bool = False) -> None:
    """Refuse a converted dataset that :func:`damage` finds damaged, naming what and how to convert it again."""
    found = damage(format_dir, every_file=every_file)
    if found:
        problems = [problem for listed in found.values() for problem in listed]
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise DamagedShard(f"{shown}: the data is damaged; {reconvert_advice(found)}")


def identity(format_dir: Path) -> str | None:
    """The converted dataset's identity, which a record names and its currency compares: the SHA-256 over its
    format and each shard's records as its conversion wrote them (position, name, label, pixels; not the files'
    bytes, which LMDB does not write the same twice, nor the timings), so that the same images converted again
    are the same data. None where nothing is converted there yet, or its records are unreadable or from an older
    dlbench (:func:`check` judges those)."""
    try:
        written_at = (Path(format_dir) / CONVERTED_RECORD).stat().st_mtime_ns
    except OSError:
        return None
    return _identity(Path(format_dir), written_at)


@functools.cache  # by the conversion's date: the plan asks once per run of it
def _identity(format_dir: Path, _written_at: int) -> str | None:
    try:
        converted = json.loads((format_dir / CONVERTED_RECORD).read_text())
        shards = [(split, name, json.loads((format_dir / name / SHARD_RECORD).read_text())["records_sha256"])
                  for split, facts in sorted(converted["splits"].items()) for name in facts["shards"]]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    listed = [converted["format"], *(" ".join(shard) for shard in shards)]
    return hashlib.sha256("\n".join(listed).encode()).hexdigest()


DAMAGE_STAMPS = Path("data/.damaged")


def damage_stamp(target) -> Path:
    """The stamp that has Snakemake convert ``target`` (a conversion job's output under data/) again: an input of
    that job wherever it exists (``rules/common.smk``'s ``damage_stamps``)."""
    return DAMAGE_STAMPS / f"{Path(os.path.relpath(target)).relative_to('data')}.json"


def stamp_if_damaged(format_dir: Path, root: Path = Path(".")) -> tuple[str, list[Path]] | None:
    """Where a converted dataset no longer matches what its conversion wrote (sizes only: a truncated file), a stamp
    dated now for each conversion job whose output it is, so that Snakemake converts it again (replacing the damaged
    output) before a run reads it. A shard gone is converted again by Snakemake itself; the directory of links to
    ILSVRC12's shards is gathered again too. The stamps are written under ``root`` (the working directory, or a dry
    run's stand-ins'). What was found and done and the stamps written, or None where all matches."""
    format_dir = Path(format_dir)
    damaged = damage(format_dir, checksums=False)
    targets = [target for target in damaged if target.exists()]
    if not targets:
        return None
    if format_dir not in targets:  # its shards are linked into it: gathered again after they are converted
        targets.append(format_dir)
    said = "; ".join(problem for problems in damaged.values() for problem in problems)
    found_at = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    stamps = [files.directory(root / damage_stamp(target).parent, root / DAMAGE_STAMPS) / damage_stamp(target).name
              for target in targets]
    for target, stamp in zip(targets, stamps):
        files.write_json(stamp, {"target": str(target), "problems": damaged.get(target, []), "found_at": found_at},
                         indent=1)
    return f"{said}: converting {', '.join(map(str, targets))} again before a run reads it", stamps
