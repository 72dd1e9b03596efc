"""Command line: compare two result sets (two machines, two dates, two configs) cell by cell.

    python workflow/scripts/compare_results.py A B [--out results/comparison] [--label-a NAME] [--label-b NAME]
                                               [--metric train_speed] [--threshold 0.05] [--contended leave_out]

A and B are results directories (each with tables/runs.csv or runs/**/rep*.json). Writes comparison.csv and
comparison.md (every metric: each set's cell, the ratio B ÷ A with its 95 % interval and its verdict: faster,
slower, the same, or not resolved and the runs that would resolve it; cells only in one set) and
comparison_<metric>.{png,svg}. docs/statistics.md defines the verdicts.
"""
import argparse
from pathlib import Path

from dlbench import stats
from dlbench.figures.compare import write
from dlbench.metrics import METRICS
from dlbench.tables.appendix import CONTENDED

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("a", type=Path, help="results directory A (the baseline)")
parser.add_argument("b", type=Path, help="results directory B")
parser.add_argument("--out", type=Path, default=Path("results/comparison"))
parser.add_argument("--label-a", help="A's name in the table and figure (default: its directory's)")
parser.add_argument("--label-b")
parser.add_argument("--metric", default="train_speed", choices=list(METRICS), help="the figure's metric")
parser.add_argument("--threshold", type=float, default=stats.THRESHOLD,
                    help="the smallest ratio that counts as a difference (config statistics.threshold)")
parser.add_argument("--contended", default="leave_out", choices=CONTENDED,
                    help="whether a cell's contended runs count (config statistics.contended)")
args = parser.parse_args()
if not 0 < args.threshold <= 1:
    parser.error(f"--threshold: {args.threshold} is not in (0, 1]")
try:
    written = write(args.a, args.b, args.out, args.label_a, args.label_b, args.metric, args.threshold, args.contended)
except (FileNotFoundError, ValueError) as error:  # a set that is not one: its file and what it lacks
    parser.exit(2, f"compare: {error}\n")
for path in written:
    print(f"wrote {path}")
