"""Command line (make retry-failed): set the last workflow run's failed records aside and run its command again, so
that Snakemake redoes just those, with the config, profile and executor they ran with; then its report.

    python workflow/scripts/retry_failed.py [--unavailable] [--results DIR] [-- SNAKEMAKE_ARGS...]

SNAKEMAKE_ARGS are added to the remembered command (make retry-failed SNAKEMAKE_ARGS="--jobs 4").
"""
import argparse
import subprocess
import sys
from pathlib import Path

from dlbench import files
from dlbench.jobs.retry import LAST_RUN, forget_failed_fetches, replay, set_aside

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--unavailable", action="store_true", help="also retry runs recorded as unavailable")
parser.add_argument("--results", type=Path, default=LAST_RUN.parent)
parser.add_argument("snakemake_args", nargs="*", help="added to the remembered snakemake command")
args = parser.parse_args()

last_run_path = args.results / LAST_RUN.name
if not last_run_path.exists():
    sys.exit(f"retry-failed: {last_run_path} is missing: no workflow run has executed jobs with these results (a "
             "dry run remembers nothing). Run the workflow first (make run, or your snakemake command).")
last_run = files.read_json(last_run_path)
try:
    started_in, command = replay(last_run, args.snakemake_args)
except ValueError as error:
    sys.exit(f"retry-failed: {error}")
statuses = ("failed", "unavailable") if args.unavailable else ("failed",)
ours = {(Path(last_run["workdir"]) / record).resolve() for record in last_run["records"]}
moved = set_aside(args.results / "runs", args.results / "runs-failed", statuses, only=ours)
for path in moved:
    print(f"set aside: {path}")
for path in forget_failed_fetches(Path(last_run["workdir"]) / "data" / "raw"):
    print(f"will be fetched again: {path.parent}")
print(f"{len(moved)} run(s) to redo; in {started_in}: {' '.join(command)}", flush=True)
status = subprocess.run(command, check=False, cwd=started_in).returncode
report = subprocess.run([*command, "--report", str(Path(last_run["workdir"]) / "results" / "report.html")],
                        check=False, cwd=started_in).returncode
sys.exit(status or report)
