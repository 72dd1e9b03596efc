"""Harness overhead: the workflow's PyTorch images/s vs. a bare minimal PyTorch loop.

Same network, batch, threads and synthetic data; both in fresh processes, in A-B-B-A order so that
the machine's drift hits both; prints the median of the pairwise ratios and their interquartile
range (goal >= 0.98).

    .venv/bin/python benchmarks/pytorch_overhead.py --network resnet50 --variant cifar10 --batch 16
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dlbench import monitor
from dlbench.spec import RunSpec

BARE_LOOP = """
import sys, time, torch
sys.path.insert(0, {scripts!r})
from dlbench.networks import network
from dlbench.backends.pytorch import build
torch.set_num_threads({threads})
description = network({network!r}, {variant!r})
model = build(description).train()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.randn({batch}, *description.input_shape)
labels = torch.randint(0, description.num_classes, ({batch},))
def step():
    optimizer.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()
for _ in range({warmup}):
    step()
start = time.perf_counter()
for _ in range({timed}):
    step()
print({batch} * {timed} / (time.perf_counter() - start))
"""


def workflow_rate(args, scratch: Path) -> tuple[float, float]:
    spec = RunSpec("pytorch", f"{args.variant}-synthetic", args.network, "cpu", 1, args.batch,
                   args.warmup + args.timed, args.warmup, 0.01, args.threads)
    record = monitor.run(spec, sys.executable, scratch / "run.log", 3600, 20, "benchmark")
    if record["status"] != "ok":
        raise SystemExit(record["reason"])
    return record["timing"]["images_per_second_mean"], record["timing"]["cpu_per_wall"]


def bare_rate(args) -> float:
    code = BARE_LOOP.format(scripts=str(ROOT / "workflow" / "scripts"), **vars(args))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=monitor.runner_environment(args.threads, gpus=0))
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--variant", default="cifar10")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--timed", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=4, help="ABBA rounds; each gives two pairs")
    args = parser.parse_args()
    ratios, cpu = [], []
    with tempfile.TemporaryDirectory() as scratch:
        for round_ in range(args.rounds):
            # A B B A: a slow drift of the machine's speed hits both sides equally.
            first, cpu_first = workflow_rate(args, Path(scratch))
            bare_first, bare_second = bare_rate(args), bare_rate(args)
            second, cpu_second = workflow_rate(args, Path(scratch))
            ratios += [first / bare_first, second / bare_second]
            cpu += [cpu_first, cpu_second]
            print(f"round {round_ + 1}: workflow {first:.1f}, {second:.1f} img/s (CPU/wall {cpu_first:.2f}, "
                  f"{cpu_second:.2f}); bare loop {bare_first:.1f}, {bare_second:.1f} img/s", flush=True)
    quartiles = statistics.quantiles(ratios, n=4)
    print(json.dumps({"network": f"{args.network}/{args.variant}", "batch": args.batch, "threads": args.threads,
                      "pairs": len(ratios), "ratio_median": round(statistics.median(ratios), 3),
                      "ratio_iqr": [round(quartiles[0], 3), round(quartiles[2], 3)],
                      "cpu_per_wall_median": round(statistics.median(cpu), 2)}))


if __name__ == "__main__":
    main()
