"""Command line (make retry-failed): set failed records aside; `snakemake` then reruns just those.

    python workflow/scripts/retry_failed.py [--unavailable]
"""
import argparse
from pathlib import Path

from dlbench.retry import set_aside

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--unavailable", action="store_true", help="also retry runs recorded as unavailable")
parser.add_argument("--results", type=Path, default=Path("results"))
args = parser.parse_args()
statuses = ("failed", "unavailable") if args.unavailable else ("failed",)
moved = set_aside(args.results / "runs", args.results / "runs-failed", statuses)
for path in moved:
    print(f"set aside: {path}")
print(f"{len(moved)} run(s) will be redone by the next snakemake run")
