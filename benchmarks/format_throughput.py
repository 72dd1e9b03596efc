"""Conversion throughput per format on one core, at the real datasets' sizes (generated stand-ins).

Goals (formats issue): CIFAR10 >= 5,000 images/s per format per core; MNIST into every format
in under 60 s in total. ``imagenet`` converts a generated miniature ILSVRC12 (photo-sized JPEGs
read from the tars, resized to shorter side 256) as one shard job does.

    .venv/bin/python benchmarks/format_throughput.py [--family cifar10] [--formats lmdb tfrecord cntk]
    .venvs/mxnet/bin/python benchmarks/format_throughput.py --formats recordio   # MXNet's writer
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dlbench import datasets, formats
from dlbench.checks import bench

SIZES = {"mnist": (60_000, 10_000), "cifar10": (50_000, 10_000), "imagenet": (2_000, 500)}
GOALS = {"cifar10": ">= 5000"}  # images/s per format per core
TOTAL_GOALS = {"mnist": "<= 60"}  # seconds, every format


def file_creates_per_second(directory: Path, count: int = 2000) -> float:
    """How fast this filesystem creates small files right now: a mount with `discard` slows to a
    crawl for a while after large deletions, which would otherwise be blamed on a converter."""
    probe = directory / "probe"
    probe.mkdir()
    start = time.perf_counter()
    for index in range(count):
        (probe / f"{index}.bin").write_bytes(b"x" * 3072)
    rate = count / (time.perf_counter() - start)
    shutil.rmtree(probe)
    os.sync()
    return rate


def prepare(family: str, root: Path, images: int | None = None):
    """Stand-in archives at the real dataset's size (or ``images`` training images and a fifth as many test
    images, for a smoke run), unpacked (or indexed), as a conversion source."""
    train_images, test_images = (images, max(1, images // 5)) if images else SIZES[family]
    if family == "imagenet":
        from dlbench.datasets import ilsvrc12

        ilsvrc12.generate(root / "raw", 10, train_images, test_images, seed=0)
        ilsvrc12.build_index(root / "raw", root / "index", log=lambda _: None)
        return ilsvrc12.Source(root / "raw", root / "index")
    datasets.generate(family, root / "raw", train_images, test_images, seed=0)
    datasets.unpack(family, root / "raw", root / "data")
    return formats.ArraySource.load(family, root / "data")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", choices=SIZES, action="append")
    parser.add_argument("--formats", nargs="+", default=sorted(set(formats.MODULES) - set(formats.WRITER_ENVIRONMENTS)))
    parser.add_argument("--dir", type=Path, default=ROOT / "data", help="where to write (the workflow writes data/)")
    parser.add_argument("--images", type=int, help="training images (default: the real dataset's count)")
    parser.add_argument("--rounds", type=int, default=2, help="conversions of each format")
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core, as one conversion job gets
    measurements = []
    for family in args.family or list(SIZES):
        args.dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=args.dir, prefix=".benchmark-") as scratch:
            root = Path(scratch)
            source = prepare(family, root, args.images)
            case = f"{family}, {args.images or SIZES[family][0]} training images, one core"
            totals = [0.0] * args.rounds
            for format_name in args.formats:
                rates = []
                for round_ in range(args.rounds):
                    shutil.rmtree(root / format_name, ignore_errors=True)
                    os.sync()
                    creates = file_creates_per_second(root)
                    images = seconds = 0
                    for split in formats.SPLITS:
                        shard = formats.Shard(format_name, split, 0, 1, datasets.FAMILIES[family].encoding,
                                              datasets.FAMILIES[family].image_shape)
                        stats = formats.write_shard(shard, source, root / format_name / shard.name, log=lambda _: None)
                        images, seconds = images + stats["images"], seconds + stats["seconds"]
                    totals[round_] += seconds
                    rates.append(images / seconds)
                    print(json.dumps({"family": family, "format": format_name, "round": round_ + 1, "images": images,
                                      "seconds": round(seconds, 2),
                                      "images_per_second_one_core": round(images / seconds),
                                      "file_creates_per_second_before": round(creates)}), flush=True)
                measurements.append(bench.Measurement(
                    "format_throughput", f"{format_name} conversion images/s", formats.WRITER_ENVIRONMENTS.get(
                        format_name, "workflow"), case, rates, goal=GOALS.get(family, "")))
            measurements.append(bench.Measurement("format_throughput", "every format's conversion seconds",
                                                  "workflow", case, totals, goal=TOTAL_GOALS.get(family, "")))
    for measurement in measurements:
        print(bench.line(measurement))
    bench.emit(measurements)

if __name__ == "__main__":
    main()
