"""What a workflow run ends with: how many runs are ok, failed or unavailable per framework, and
where to look. Snakemake's own last line ("100% done") counts jobs, and a failed measurement is a
job that succeeded in writing its record."""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from ..files import Unreadable
from ..record.io import read_record

STATUSES = ("ok", "failed", "unavailable", "unreadable", "not run")
SHOWN = 8  # reasons listed per status


def summarise(record_paths: list[str]) -> str:
    counts: dict[str, Counter] = defaultdict(Counter)
    reasons: dict[str, Counter] = defaultdict(Counter)  # status -> first line of reason -> runs
    failed_logs = []
    for path in map(Path, record_paths):
        framework = path.parts[-7] if len(path.parts) >= 7 else "?"  # results/runs/<framework>/<dataset>/...
        if not path.exists():
            counts[framework]["not run"] += 1
            continue
        try:
            record = read_record(path)
        except Unreadable as error:
            counts[framework]["unreadable"] += 1
            reasons["unreadable"][f"{error}; left out of the tables (redo the run: snakemake --force {path})"] += 1
            continue
        status = record["status"]
        counts[framework][status] += 1
        if status != "ok":
            reasons[status][(record["reason"].strip().splitlines() or ["?"])[0]] += 1
        if status == "failed":
            failed_logs.append(path.with_suffix(".log"))
    if not counts:
        return "dlbench: no runs in this workflow"
    width = max(map(len, counts)) + 2
    lines = ["dlbench runs:", "  " + "framework".ljust(width) + "".join(s.rjust(13) for s in STATUSES)]
    for framework in sorted(counts):
        lines.append("  " + framework.ljust(width) + "".join(str(counts[framework][s]).rjust(13) for s in STATUSES))
    for status in ("failed", "unavailable", "unreadable"):
        for reason, runs in reasons[status].most_common(SHOWN):
            lines.append(f"  {status} ({runs}): {reason}")
    if failed_logs:
        shown = ", ".join(map(str, failed_logs[:3])) + (" ..." if len(failed_logs) > 3 else "")
        lines.append(f"  failed runs' logs: {shown}; make retry-failed redoes them")
    if any(counts[f]["not run"] for f in counts):
        lines.append("  not run: their jobs did not finish (see Snakemake's log above)")
    lines.append("  every run: results/tables/runs.csv")
    return "\n".join(lines)
