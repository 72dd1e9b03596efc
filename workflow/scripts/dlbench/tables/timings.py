"""Where a workflow run's time went, from its records: each run's wall time split into its start (interpreter,
dlbench), the framework's import, the build of model and input pipeline, the warm-up, the timed window and the
rest (the monitor's start and end, the record; an inference run's single-image calls, an accuracy run's
evaluations); per framework and task, the sums and each part's share. What
measures nothing (everything but the timed window) is what a shorter ``make run`` cuts first.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import files
from ..spec import run_variant

# The parts of a run's wall time, in the order they happen (the record's timing fields)
PARTS = {"start": "start_seconds", "import": "import_seconds", "build": "build_seconds", "warm-up": "warmup_seconds",
         "timed": "timed_seconds"}


def run_timings(records: list[dict]) -> pd.DataFrame:
    """One row per run: its identity, status, wall seconds and each part's; ``other``: the wall time no part
    covers. A run that did not finish has its wall time alone."""
    rows = []
    for record in records:
        run, timing = record["run"], record["timing"]
        row = {"framework": run["framework"], "dataset": run["dataset"], "network": run["network"],
               "device": run["device"], "variant": run_variant(run), "task": run["task"],
               "repetition": run["repetition"], "status": record["status"], "wall": timing.get("wall_seconds")}
        row.update({part: timing.get(field) for part, field in PARTS.items()})
        parts = [row[part] for part in PARTS]
        row["other"] = row["wall"] - sum(parts) if row["wall"] is not None and None not in parts else None
        rows.append(row)
    return pd.DataFrame(rows, columns=["framework", "dataset", "network", "device", "variant", "task", "repetition",
                                       "status", "wall", *PARTS, "other"])


def by_framework(runs: pd.DataFrame) -> pd.DataFrame:
    """Per framework and task: runs, their summed wall seconds, and each part's share of the wall time of the
    runs that timed every part."""
    rows = []
    for (framework, task), group in runs.groupby(["framework", "task"]):
        timed = group.dropna(subset=[*PARTS, "other"])
        wall = timed["wall"].sum()
        row = {"framework": framework, "task": task, "runs": len(group), "wall s": group["wall"].sum(),
               "median wall s": group["wall"].median()}
        row.update({f"{part} %": 100 * timed[part].sum() / wall if wall else None for part in [*PARTS, "other"]})
        rows.append(row)
    return pd.DataFrame(rows)


def write_timings(records: list[dict], csv: Path, md: Path) -> None:
    runs = run_timings(records)
    files.write_text(csv, runs.to_csv(index=False))
    table = by_framework(runs)
    total = runs["wall"].sum()
    measured = runs.dropna(subset=[*PARTS, "other"])
    shares = ", ".join(f"{part} {100 * measured[part].sum() / measured['wall'].sum():.0f} %"
                       for part in [*PARTS, "other"]) if len(measured) else "none timed"
    lines = ["# Where the runs' time went", "",
             (f"{len(runs)} runs, {total / 60:.1f} minutes of run wall time together (their jobs' time in "
              "Snakemake adds the job's own start, about a second each). Of the runs that timed every part: "
              f"{shares}. Only the timed window measures anything."), "",
             table.to_markdown(index=False, floatfmt=".1f"), "",
             f"Every run: {csv.name}."]
    files.write_text(md, "\n".join(lines) + "\n")
