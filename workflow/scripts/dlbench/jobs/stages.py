"""Where a workflow run's time went, stage by stage: environments, data, the ceiling, the runs, the tables and
figures. Read from Snakemake's own log of the run (its time stamp before each job's start and end), at the run's
end, in Snakemake's process (the Snakefile's ``onsuccess`` and ``onerror``): no job of the workflow is timed by
anything but Snakemake. ``results/timings.md`` splits the runs' stage further, run by run, from their records.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pandas as pd

from .. import files

# Snakemake 9's log: "[Sat Nov 28 11:04:03 2026]", then "localrule train:" (or "rule", "checkpoint") with an
# indented "jobid: 10" a few lines down, and at its end "Finished jobid: 10 (Rule: train)" or "Error in rule train:"
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
STARTED = re.compile(r"^(?:local)?(?:rule|checkpoint) (\w+):$")
FAILED = re.compile(r"^Error in rule (\w+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISHED = re.compile(r"^Finished jobid: (\d+) \(Rule: (\w+)\)$")

# A stage is named by the rules file a rule is in, or for train.smk's rules by the rule
STAGE_OF_RULE = {"framework_venv": "environments", "worker_conda_environment": "environments", "ceiling": "ceiling",
                 "train": "runs"}
STAGE_OF_FILE = {"datasets.smk": "data", "aggregate.smk": "tables and figures"}
STAGES = ["environments", "data", "ceiling", "runs", "tables and figures"]


@dataclass(frozen=True)
class Job:
    rule: str
    start: datetime
    end: datetime


def jobs(log: str) -> list[Job]:
    """The jobs of a Snakemake log that ended (finished or failed), each with its start and end stamps."""
    stamp, starting, failing = None, None, None
    started: dict[str, tuple[str, datetime]] = {}
    ended = []
    for line in log.splitlines():
        if match := STAMP.match(line):
            stamp, starting, failing = datetime.strptime(match.group(1), "%a %b %d %H:%M:%S %Y"), None, None
        elif match := STARTED.match(line):
            starting = match.group(1)
        elif match := FAILED.match(line):
            failing = match.group(1)
        elif (match := JOBID.match(line)) and stamp:
            if starting:
                started[match.group(1)] = (starting, stamp)
            elif failing and match.group(1) in started:
                rule, start = started.pop(match.group(1))
                ended.append(Job(rule, start, stamp))
        elif (match := FINISHED.match(line)) and stamp and match.group(1) in started:
            rule, start = started.pop(match.group(1))
            ended.append(Job(rule, start, stamp))
    return ended


def stage_of(rule: str, rule_files: dict[str, str]) -> str | None:
    """A rule's stage; None for the Snakefile's own (its target rule, which does no work)."""
    snakefile = Path(rule_files.get(rule, "")).name
    if snakefile == "Snakefile":
        return None
    return STAGE_OF_RULE.get(rule) or STAGE_OF_FILE.get(snakefile, "other")


def stage_table(ended: list[Job], rule_files: dict[str, str]) -> pd.DataFrame:
    """Per stage: its jobs, when its first began after the workflow's first job, its window (first start to last
    end; stages overlap where Snakemake ran their jobs side by side) and its jobs' time summed."""
    frame = pd.DataFrame([{"stage": stage_of(job.rule, rule_files), "start": job.start, "end": job.end}
                          for job in ended])
    origin = frame["start"].min()
    rows = []
    for stage, group in frame.groupby("stage"):
        rows.append({"stage": stage, "jobs": len(group), "from s": (group["start"].min() - origin).total_seconds(),
                     "window s": (group["end"].max() - group["start"].min()).total_seconds(),
                     "job time s": (group["end"] - group["start"]).dt.total_seconds().sum()})
    order = {stage: index for index, stage in enumerate(STAGES)}
    return pd.DataFrame(rows).sort_values("stage", key=lambda column: column.map(lambda s: order.get(s, len(order))))


def write_stages(logs: str | list[str], rule_files: dict[str, str], md: Path) -> str:
    """results/stages.md from the run's log (``logs``: the handler's ``log``, Snakemake 9's list of its log files,
    the first its own); returns its summary line (what the run prints at its end). A run in which no job ran (all up
    to date) leaves the last one's table as it was."""
    paths = [logs] if isinstance(logs, str) else list(logs)
    if not paths or not Path(paths[0]).is_file():  # a run Snakemake kept no log of (a logger plugin's)
        return f"Snakemake kept no log file of this run; {md} is the last logged run's"
    log_path = Path(paths[0])
    ended = [job for job in jobs(log_path.read_text(errors="replace")) if stage_of(job.rule, rule_files)]
    if not ended:
        return f"no job ran; {md} is the last run's"
    table = stage_table(ended, rule_files)
    first, last = min(job.start for job in ended), max(job.end for job in ended)
    summary = (f"{len(ended)} jobs from {first:%Y-%m-%d %H:%M:%S} to {last:%H:%M:%S}, "
               f"{(last - first).total_seconds() / 60:.1f} minutes: "
               + ", ".join(f"{stage} {window / 60:.1f}" for stage, window in zip(table["stage"], table["window s"]))
               + " (each stage's window, minutes)")
    md.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(md, "\n".join([
        "# Where the workflow's time went, stage by stage", "",
        (f"The last workflow run that ran jobs (Snakemake's log {log_path.name}): {summary}. A stage's window runs "
         "from its first job's start to its last job's end, stamped by Snakemake to the second; stages overlap where "
         "their jobs ran side by side, and a job's time counts its start by Snakemake. The report (snakemake "
         "--report) is made after it. Each run's parts: timings.md."), "",
        table.to_markdown(index=False, floatfmt=".0f"), ""]))
    return summary
