"""A/A: one config measured twice on this machine in interleaved rounds (make interleaved), the two result sets
compared (make compare). Each round gives the share of the cells both sets have that the verdicts call faster or
slower (or higher, lower): differences the intervals missed, since the two sets measured the same thing. Goal: at
most 5 % (docs/statistics.md).

    .venv/bin/python benchmarks/aa_comparison.py [--config .test/config-aa/config.yaml] [--rounds 2]
    .venv/bin/python benchmarks/aa_comparison.py --networks lenet --tasks train --repetitions 2 --iterations 4 \
        --rounds 1                                                        (a smoke run: it runs; its share tells little)
"""
import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))
from dlbench.checks import bench

SCRIPTS = ROOT / "workflow" / "scripts"


def config_of(args) -> dict:
    """The config, with each benchmark's networks, tasks and iterations as the arguments narrow them."""
    config = yaml.safe_load(args.config.read_text())
    if args.repetitions:
        config["repetitions"] = args.repetitions
    for entry in config["benchmarks"]:
        entry.update({key: value for key, value in (("networks", args.networks), ("tasks", args.tasks),
                                                     ("iterations", args.iterations)) if value})
        if args.iterations:  # half of them timed at least
            entry["warmup_iterations"] = min(entry.get("warmup_iterations", 1), args.iterations // 2)
    return config


def one_round(config: dict, scratch: Path, cores: str) -> tuple[float, int, int]:
    """Both sets measured in interleaved rounds, then compared: the share called, how many, of how many."""
    (scratch / "config.yaml").write_text(yaml.safe_dump(config))
    subprocess.run([sys.executable, str(SCRIPTS / "interleave.py"), str(scratch / "a"), str(scratch / "b"),
                    "--configfile", str(scratch / "config.yaml"), "--cores", cores, "results/tables/runs.csv"],
                   check=True, cwd=ROOT, stdout=sys.stderr)
    subprocess.run([sys.executable, str(SCRIPTS / "compare_results.py"), str(scratch / "a" / "results"),
                    str(scratch / "b" / "results"), "--out", str(scratch / "comparison")],
                   check=True, cwd=ROOT, stdout=sys.stderr)
    table = pd.read_csv(scratch / "comparison" / "comparison.csv")
    both = table[table["in"] == "both"]
    called = int(both["resolved"].sum())
    print(json.dumps({"compared": len(both), "called": called,
                      "cells": both.loc[both["resolved"], ["metric", "network", "task", "ratio_text"]]
                      .to_dict("records")}), flush=True)
    return called / len(both), called, len(both)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", type=Path, default=ROOT / ".test" / "config-aa" / "config.yaml")
    parser.add_argument("--rounds", type=int, default=2, help="A/A pairs, each two sets in interleaved rounds")
    parser.add_argument("--cores", default="all")
    parser.add_argument("--repetitions", type=int)
    parser.add_argument("--networks", nargs="+")
    parser.add_argument("--tasks", nargs="+")
    parser.add_argument("--iterations", type=int)
    args = parser.parse_args()
    config = config_of(args)
    shares, called, compared = [], 0, 0
    for _ in range(args.rounds):
        scratch = Path(tempfile.mkdtemp(prefix="dlbench-aa-"))
        try:
            share, round_called, round_compared = one_round(config, scratch, args.cores)
        except subprocess.CalledProcessError as error:  # its logs kept: interleave.py has named them
            raise SystemExit(f"{Path(error.cmd[1]).name} failed (exit {error.returncode}); kept: {scratch}") from None
        shutil.rmtree(scratch)
        shares.append(share)
        called, compared = called + round_called, compared + round_compared
    case = (f"{args.config.relative_to(ROOT) if args.config.is_relative_to(ROOT) else args.config}, "
            f"{config['repetitions']} repetitions, {compared} cells compared in all, {called} called")
    measurement = bench.Measurement("aa_comparison", "share of A/A cells called faster or slower",
                                    ", ".join(config["frameworks"]), case, shares, goal="<= 0.05", share=True,
                                    bound=1.0)
    print(bench.line(measurement))
    bench.emit([measurement])


if __name__ == "__main__":
    main()
