"""What a workflow run ends with: how many runs are ok, failed or unavailable per framework, and
where to look. Snakemake's own last line ("100% done") counts jobs, and a failed measurement is a
job that succeeded in writing its record."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path

STATUSES = ("ok", "failed", "unavailable", "not run")
SHOWN = 8  # reasons listed per status


def summarise(record_paths: list[str]) -> str:
    counts: dict[str, Counter] = defaultdict(Counter)
    reasons: dict[str, Counter] = defaultdict(Counter)  # status -> first line of reason -> runs
    failed_logs = []
    for path in map(Path, record_paths):
        framework = path.parts[-7] if len(path.parts) >= 7 else "?"  # results/runs/<framework>/<dataset>/...
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError):
            counts[framework]["not run"] += 1
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
    for status in ("failed", "unavailable"):
        for reason, runs in reasons[status].most_common(SHOWN):
            lines.append(f"  {status} ({runs}): {reason}")
    if failed_logs:
        shown = ", ".join(map(str, failed_logs[:3])) + (" ..." if len(failed_logs) > 3 else "")
        lines.append(f"  failed runs' logs: {shown}; make retry-failed redoes them")
    if any(counts[f]["not run"] for f in counts):
        lines.append("  not run: their jobs did not finish (see Snakemake's log above)")
    lines.append("  every run: results/tables/runs.csv")
    return "\n".join(lines)
