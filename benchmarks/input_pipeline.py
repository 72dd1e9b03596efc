"""Input-pipeline cost: PyTorch images/s reading the LMDB (generated data) ÷ synthetic images/s.

Same network, batch and threads through the workflow's runner, the workflow's default loader
workers (none on a CPU, one per thread on a GPU); runs in A-B-B-A order so the machine's drift hits
both; prints the median of the pairwise ratios and their interquartile range (goal >= 0.95), from
the runs' mean rate (what the tables report) and from their median iteration (robust to a shared
machine's hiccups, blind to rare slow steps), and the LMDB runs' input-wait share.

    .venv/bin/python benchmarks/input_pipeline.py --family cifar10 --network resnet50 --batch 16
    .venv/bin/python benchmarks/input_pipeline.py --family mnist --network lenet --batch 64 --timed 300
    python3 benchmarks/input_pipeline.py --device cuda --threads 16 --family mnist --network lenet --batch 64
"""
import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dlbench import datasets, formats, monitor
from dlbench.spec import RunSpec

DEVICES = {"cpu": "cpu", "cuda": "gpu1"}  # --device: the run's device


def rates(args, mode: str, scratch: Path) -> tuple[float, float, float]:
    device = DEVICES[args.device]
    workers = args.workers if args.workers is not None else args.threads if device != "cpu" else 0
    spec = RunSpec("pytorch", f"{args.family}-{mode}", args.network, device, 1, args.batch,
                   args.warmup + args.timed, args.warmup, 0.01, args.threads,
                   data_dir=str(scratch / "lmdb") if mode == "generated" else None, loader_workers=workers)
    record = monitor.run(spec, sys.executable, scratch / "run.log", 3600, 20, "benchmark")
    if record["status"] != "ok":
        raise SystemExit(record["reason"])
    timing = record["timing"]
    return timing["images_per_second_mean"], timing["images_per_second_median"], timing["input_wait_share"]


def summary(ratios: list[float]) -> dict:
    quartiles = statistics.quantiles(ratios, n=4)
    return {"median": round(statistics.median(ratios), 3), "iqr": [round(quartiles[0], 3), round(quartiles[2], 3)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="cifar10", choices=["mnist", "cifar10"])
    parser.add_argument("--network", help="default: the family's network in the thesis (MNIST LeNet, CIFAR10 ResNet50)")
    parser.add_argument("--images", type=int, default=10_000, help="generated training images")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", choices=DEVICES, help="cuda: the first GPU")
    parser.add_argument("--workers", type=int, help="loader workers; default: the workflow's")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--timed", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="ABBA rounds; each gives two pairs")
    args = parser.parse_args()
    args.network = args.network or {"mnist": "lenet", "cifar10": "resnet50"}[args.family]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        datasets.generate(args.family, root / "raw", args.images, 100, seed=0)
        datasets.unpack(args.family, root / "raw", root / "data")
        formats.convert("lmdb", args.family, root / "data", root / "lmdb", log=lambda _: None)
        by_mean, by_median, waits = [], [], []
        for round_ in range(args.rounds):
            real_first, synthetic_first = rates(args, "generated", root), rates(args, "synthetic", root)
            synthetic_second, real_second = rates(args, "synthetic", root), rates(args, "generated", root)
            for real, synthetic in ((real_first, synthetic_first), (real_second, synthetic_second)):
                by_mean.append(real[0] / synthetic[0])
                by_median.append(real[1] / synthetic[1])
                waits.append(real[2])
            print(f"round {round_ + 1}: LMDB {real_first[0]:.1f}, {real_second[0]:.1f} img/s; "
                  f"synthetic {synthetic_first[0]:.1f}, {synthetic_second[0]:.1f} img/s (means)", flush=True)
    print(json.dumps({"network": f"{args.network}/{args.family}", "device": args.device, "batch": args.batch,
                      "threads": args.threads, "workers": args.workers, "pairs": len(by_mean),
                      "ratio_of_means": summary(by_mean), "ratio_of_median_iterations": summary(by_median),
                      "lmdb_input_wait_share": summary(waits)}))


if __name__ == "__main__":
    main()
