"""Input-pipeline cost: a framework's images/s reading its own format (generated data: PyTorch's LMDB,
MXNet's RecordIO, ...) ÷ synthetic images/s.

Same network, batch and threads through the workflow's runner, the workflow's default loader
workers (PyTorch: none on a CPU, one per thread on a GPU); runs in A-B-B-A order so the machine's drift
hits both; reports the pairwise ratios (goal >= 0.95) from the runs' mean rate (what the tables report) and
from their median iteration (robust to a shared machine's hiccups, blind to rare slow steps), and the
stored-data runs' input-wait share, each with its spread (dlbench.checks.bench).

    .venv/bin/python benchmarks/input_pipeline.py --family cifar10 --network resnet50 --batch 16
    .venv/bin/python benchmarks/input_pipeline.py --family mnist --network lenet --batch 64 --timed 300
    .venv/bin/python benchmarks/input_pipeline.py --framework mxnet --family mnist --network lenet --batch 64
    python3 benchmarks/input_pipeline.py --device cuda --threads 16 --family mnist --network lenet --batch 64
"""
import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dlbench import datasets
from dlbench.checks import bench
from dlbench.formats import jobs
from dlbench.registry import REGISTRY
from dlbench.run import monitor
from dlbench.spec import RunSpec

DEVICES = {"cpu": "cpu", "cuda": "gpu1"}  # --device: the run's device


def rates(args, mode: str, scratch: Path) -> tuple[float, float, float, float | None]:
    """The run's mean and median-iteration images/s, its input-wait share and its contention share."""
    device = DEVICES[args.device]
    workers = args.workers if args.workers is not None else args.threads if device != "cpu" else 0
    spec = RunSpec(args.framework, f"{args.family}-{mode}", args.network, device, 1, args.batch,
                   args.warmup + args.timed, args.warmup, 0.01, args.threads,
                   data_dir=str(scratch / "stored") if mode == "generated" else None, loader_workers=workers)
    record = monitor.run(spec, bench.framework_python(args.framework), scratch / "run.log", 3600, 20, "benchmark")
    if record["status"] != "ok":
        raise SystemExit(record["reason"])
    timing = record["timing"]
    return (timing["images_per_second_mean"], timing["images_per_second_median"], timing["input_wait_share"],
            timing["contention_share"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default="pytorch", choices=sorted(REGISTRY))
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
        stored = REGISTRY[args.framework].data_format
        # in the framework's environment: the RecordIO writer needs MXNet's
        jobs.run_with({"kind": "convert", "format": stored, "family": args.family, "data_dir": str(root / "data"),
                       "output": str(root / "stored"), "seed": 0}, bench.framework_python(args.framework))
        runs = {"generated": [], "synthetic": []}
        for round_ in range(args.rounds):
            real_first, synthetic_first = rates(args, "generated", root), rates(args, "synthetic", root)
            synthetic_second, real_second = rates(args, "synthetic", root), rates(args, "generated", root)
            runs["generated"] += [real_first, real_second]
            runs["synthetic"] += [synthetic_first, synthetic_second]
            print(f"round {round_ + 1}: {stored} {real_first[0]:.1f}, {real_second[0]:.1f} img/s; "
                  f"synthetic {synthetic_first[0]:.1f}, {synthetic_second[0]:.1f} img/s (means)", flush=True)
    case = f"{args.network}/{args.family}, batch {args.batch}, {args.device}, {args.threads} threads, " \
           f"{'default' if args.workers is None else args.workers} loader workers"
    contention = [run[3] for side in runs.values() for run in side]

    def ratio(quantity: str, index: int, label: str) -> bench.Measurement:
        real, synthetic = ([run[index] for run in runs[mode]] for mode in ("generated", "synthetic"))
        return bench.Measurement("input_pipeline", quantity, args.framework, case,
                                 [r / s for r, s in zip(real, synthetic)], goal=">= 0.95",
                                 sides={f"{stored} ({label})": real, f"synthetic ({label})": synthetic},
                                 contention_shares=contention)

    measurements = [ratio(f"{stored} ÷ synthetic images/s (mean rate)", 0, "mean"),
                    ratio(f"{stored} ÷ synthetic images/s (median iteration)", 1, "median iteration"),
                    bench.Measurement("input_pipeline", f"{stored} runs' input-wait share", args.framework, case,
                                      [run[2] for run in runs["generated"]],
                                      contention_shares=[run[3] for run in runs["generated"]], share=True)]
    for measurement in measurements:
        print(bench.line(measurement))
    bench.emit(measurements)

if __name__ == "__main__":
    main()
