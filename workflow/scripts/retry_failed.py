"""Command line (make retry-failed): set failed records aside; `snakemake` then reruns just those.

    python workflow/scripts/retry_failed.py [--unavailable]
"""
import argparse
from pathlib import Path

from dlbench.jobs.retry import forget_failed_fetches, set_aside

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--unavailable", action="store_true", help="also retry runs recorded as unavailable")
parser.add_argument("--results", type=Path, default=Path("results"))
parser.add_argument("--data", type=Path, default=Path("data"))
args = parser.parse_args()
statuses = ("failed", "unavailable") if args.unavailable else ("failed",)
moved = set_aside(args.results / "runs", args.results / "runs-failed", statuses)
for path in moved:
    print(f"set aside: {path}")
for path in forget_failed_fetches(args.data / "raw"):
    print(f"will be fetched again: {path.parent}")
print(f"{len(moved)} run(s) will be redone by the next snakemake run")
