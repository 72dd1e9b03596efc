"""PyTorch's memory format: channels_last (NHWC) ÷ NCHW images/s, per precision and compile setting.

The workflow's PyTorch harness and timed loop in this process, the two formats taking turns every
round (A-B-B-A) so the machine's drift hits both; reports the ratios per variant with their
spread (dlbench.checks.bench). ``backends.pytorch.memory_format`` takes the winner where it pays (GPU: measure there).

    .venv/bin/python benchmarks/memory_format.py --network resnet50 --family cifar10 --batch 16
    python3 benchmarks/memory_format.py --device gpu1 --network resnet50 --family imagenet --batch 256
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

import torch
from dlbench.backends import pytorch
from dlbench.checks import bench
from dlbench.datasets import FAMILIES
from dlbench.networks import network
from dlbench.spec import RunSpec
from dlbench.tasks.loop import timed_loop

FORMATS = {"nchw": torch.contiguous_format, "channels_last": torch.channels_last}


def rate(spec: RunSpec, layout: str) -> float:
    pytorch.memory_format = lambda spec, description: FORMATS[layout]  # what the harness and its batches ask
    harness = pytorch.Harness(spec, network(spec.network, FAMILIES[spec.family].sized_for))
    times = timed_loop(harness, spec.iterations, spec.warmup_iterations, progress=lambda *a, **k: None)
    return spec.batch_size_global * (spec.iterations - spec.warmup_iterations) / times["timed_window"]["seconds"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--family", default="cifar10")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--compile", default="false", help="false, true or false,true")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--timed", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2, help="A-B-B-A rounds")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    measurements = []
    for precision in args.precisions.split(","):
        for compiled in (value == "true" for value in args.compile.split(",")):
            spec = RunSpec("pytorch", f"{args.family}-synthetic", args.network, args.device, 1, args.batch,
                           args.warmup + args.timed, args.warmup, 0.01, args.threads, precision=precision,
                           compile=compiled)
            ratios, rates = [], {layout: [] for layout in FORMATS}
            for _ in range(args.rounds):
                for order in (("nchw", "channels_last"), ("channels_last", "nchw")):
                    measured = {layout: rate(spec, layout) for layout in order}
                    ratios.append(measured["channels_last"] / measured["nchw"])
                    for layout, value in measured.items():
                        rates[layout].append(value)
            measurements.append(bench.Measurement(
                "memory_format", "channels_last ÷ NCHW images/s", "pytorch",
                f"{args.network}/{args.family}, batch {args.batch}, {args.device}, {spec.variant}, "
                f"{args.threads} threads", ratios, sides=rates))
            print(bench.line(measurements[-1]), flush=True)
    bench.emit(measurements)

if __name__ == "__main__":
    main()
