"""Command line (make bench): the project's performance goals measured, in one table.

Runs every benchmark of the plan for this device (dlbench.checks.bench.PLANS: cpu, cuda, or smoke for a run that only
shows each works) with this interpreter, and the ceiling, then writes OUTPUT.md and OUTPUT.csv: per benchmark,
framework and case the median of its rounds, their interquartile range, whether they agreed (rounds that
disagree are "unsteady", never a clean ratio), the goal and whether the median meets it, and the runs'
contention share; above the table, the machine. Each benchmark's output is kept in OUTPUT.logs/. A benchmark
that fails is a row that says so; the others still run. Exit 1 if any failed.

    python workflow/scripts/bench.py [--plan cpu|cuda|smoke] [--output results/benchmarks]
"""
import argparse
import csv
import math
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd
from dlbench.checks import bench
from dlbench.hardware import gpu
from dlbench.record.provenance import cpu_model, dlbench_version, git_commit
from dlbench.tables import markdown_table

ROOT = Path(__file__).resolve().parents[2]

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--plan", choices=bench.PLANS, default="cpu")
parser.add_argument("--output", type=Path, default=Path("results/benchmarks"), help="OUTPUT.md, OUTPUT.csv")
args = parser.parse_args()

logs = args.output.parent / f"{args.output.name}.logs"
logs.mkdir(parents=True, exist_ok=True)
load_before = os.getloadavg()
rows, failed = [], False
for number, job in enumerate(bench.PLANS[args.plan], 1):
    name = f"{number:02d}-{job.script.removesuffix('.py')}"
    python, missing = bench.find_framework_python(job.framework)
    if python is None:
        rows.append({"benchmark": job.script.removesuffix(".py"), "framework": job.framework,
                     "case": " ".join(job.arguments), "verdict": f"unavailable: {missing}"})
        continue
    print(f"[{number}/{len(bench.PLANS[args.plan])}] {job.script} {' '.join(job.arguments)}", flush=True)
    started = time.monotonic()
    with open(logs / f"{name}.log", "w") as log:
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / job.script), *job.arguments],
                              stdout=subprocess.PIPE, stderr=log, text=True, check=False, cwd=ROOT)
        log.write(done.stdout)
    try:
        if done.returncode != 0:
            raise ValueError(f"exit {done.returncode}")
        measurements = bench.read(done.stdout)
    except ValueError as error:
        failed = True
        rows.append({"benchmark": job.script.removesuffix(".py"), "framework": job.framework,
                     "case": " ".join(job.arguments), "verdict": f"failed: {error} (its output: {logs / name}.log)"})
        print(f"  failed: {error}", flush=True)
        continue
    for measurement in measurements:
        rows.append(bench.table_row(measurement))
        print(f"  {bench.line(measurement)}", flush=True)
    print(f"  ({time.monotonic() - started:.0f} s)", flush=True)
for measurement in bench.ceiling_measurements(args.plan):
    rows.append(bench.table_row(measurement))
    print(bench.line(measurement), flush=True)

gpus, _ = gpu.inventory()
if gpus:
    probe = gpu.GpuProbe(gpus[:1])
    described = probe.describe()[0]
    probe.close()
    gpu_words = f"; GPU 0 of {len(gpus)}: {described['name']}, driver {described['driver']}"
else:
    gpu_words = "; no GPU"
table = pd.DataFrame(rows)
table.to_csv(args.output.with_suffix(".csv"), index=False, quoting=csv.QUOTE_MINIMAL)
shown = table.drop(columns=["values"], errors="ignore").map(
    lambda value: f"{value:.4g}" if isinstance(value, float) and not math.isnan(value) else value)
header = (f"# Benchmarks ({args.plan} plan)\n\n{platform.node()}: {cpu_model()}, {len(os.sched_getaffinity(0))} usable "
          f"cores{gpu_words}; load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
          f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
          f"dlbench {dlbench_version()} ({git_commit() or 'commit unknown'}).\n\n"

          f"Median of the rounds [interquartile range q1, q3]; a verdict other than steady means the rounds disagreed "
          f"(interquartile range over {bench.STEADY_SPREAD:.0%} of the median, or one side's runs over "
          f"{bench.STEADY_RATE_SPAN}x apart; implausible: past what the quantity can be) and the median is not a "
          f"figure; contention: the share of the run's cores "
          f"other processes took (median, max).\n\n")
args.output.with_suffix(".md").write_text(header + markdown_table(shown.fillna("")) + "\n")
print(f"wrote {args.output.with_suffix('.md')} and {args.output.with_suffix('.csv')}")
sys.exit(1 if failed else 0)
