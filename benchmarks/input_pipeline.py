"""Input-pipeline cost: PyTorch images/s reading the LMDB (generated data) ÷ synthetic images/s.

Same network, batch and threads through the workflow's runner, default loader workers; runs in
A-B-B-A order so the machine's drift hits both; prints the median of the pairwise ratios and
their interquartile range (goal >= 0.95), from the runs' mean rate (what the tables report) and
from their median iteration (robust to a shared machine's hiccups, blind to rare slow steps).

    .venv/bin/python benchmarks/input_pipeline.py --family cifar10 --network resnet50 --batch 16
    .venv/bin/python benchmarks/input_pipeline.py --family mnist --network lenet --batch 64 --timed 300
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


def rates(args, mode: str, scratch: Path) -> tuple[float, float]:
    spec = RunSpec("pytorch", f"{args.family}-{mode}", args.network, "cpu", 1, args.batch, args.warmup + args.timed,
                   args.warmup, 0.01, args.threads, data_dir=str(scratch / "lmdb") if mode == "generated" else None,
                   loader_workers=args.workers)
    record = monitor.run(spec, sys.executable, scratch / "run.log", 3600, 20, "benchmark")
    if record["status"] != "ok":
        raise SystemExit(record["reason"])
    return record["timing"]["images_per_second_mean"], record["timing"]["images_per_second_median"]


def summary(ratios: list[float]) -> dict:
    quartiles = statistics.quantiles(ratios, n=4)
    return {"median": round(statistics.median(ratios), 3), "iqr": [round(quartiles[0], 3), round(quartiles[2], 3)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="cifar10", choices=["mnist", "cifar10"])
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--workers", type=int, default=0, help="the workflow's default for CPU runs")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--timed", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3, help="ABBA rounds; each gives two pairs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        datasets.generate(args.family, root / "raw", 10_000, 100, seed=0)
        datasets.unpack(args.family, root / "raw", root / "data", None)
        formats.convert("lmdb", args.family, root / "data", root / "lmdb", log=lambda _: None)
        by_mean, by_median = [], []
        for round_ in range(args.rounds):
            real_first, synthetic_first = rates(args, "generated", root), rates(args, "synthetic", root)
            synthetic_second, real_second = rates(args, "synthetic", root), rates(args, "generated", root)
            for real, synthetic in ((real_first, synthetic_first), (real_second, synthetic_second)):
                by_mean.append(real[0] / synthetic[0])
                by_median.append(real[1] / synthetic[1])
            print(f"round {round_ + 1}: LMDB {real_first[0]:.1f}, {real_second[0]:.1f} img/s; "
                  f"synthetic {synthetic_first[0]:.1f}, {synthetic_second[0]:.1f} img/s (means)", flush=True)
    print(json.dumps({"network": f"{args.network}/{args.family}", "batch": args.batch, "threads": args.threads,
                      "workers": args.workers, "pairs": len(by_mean), "ratio_of_means": summary(by_mean),
                      "ratio_of_median_iterations": summary(by_median)}))


if __name__ == "__main__":
    main()
