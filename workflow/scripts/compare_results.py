"""Command line: compare two result sets (two machines, two dates, two configs) cell by cell.

    python workflow/scripts/compare_results.py A B [--out results/comparison] [--label-a NAME] [--label-b NAME]
                                               [--metric train_speed]

A and B are results directories (each with tables/runs.csv or runs/**/rep*.json). Writes comparison.csv and
comparison.md (every metric: each set's cell, the ratio B ÷ A, significant where the ranges over the
repetitions do not overlap, cells only in one set) and comparison_<metric>.{png,svg}.
"""
import argparse
from pathlib import Path

from dlbench.figures.compare import write
from dlbench.metrics import METRICS

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("a", type=Path, help="results directory A (the baseline)")
parser.add_argument("b", type=Path, help="results directory B")
parser.add_argument("--out", type=Path, default=Path("results/comparison"))
parser.add_argument("--label-a", help="A's name in the table and figure (default: its directory's)")
parser.add_argument("--label-b")
parser.add_argument("--metric", default="train_speed", choices=list(METRICS), help="the figure's metric")
args = parser.parse_args()
try:
    written = write(args.a, args.b, args.out, args.label_a, args.label_b, args.metric)
except (FileNotFoundError, ValueError) as error:  # a set that is not one: its file and what it lacks
    parser.exit(2, f"compare: {error}\n")
for path in written:
    print(f"wrote {path}")
