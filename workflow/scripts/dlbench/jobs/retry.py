"""Set failed run records aside so that the next ``snakemake`` run redoes only those runs.

Records are never deleted: a failed record and its log move to ``results/runs-failed/`` with
their finish time in the name, and Snakemake sees the run's output as missing. A failed fetch's
status (``data/raw/<family>/fetch.json``, which only says what could not be had) is removed, so that
the dataset is fetched again; the archives beside it are left as they are.
"""
from __future__ import annotations

import json
from pathlib import Path


def set_aside(runs_dir: Path, archive_dir: Path, statuses=("failed",)) -> list[Path]:
    moved = []
    for record_path in sorted(Path(runs_dir).rglob("rep*.json")):
        record = json.loads(record_path.read_text())
        if record["status"] not in statuses:
            continue
        stamp = (record["provenance"].get("finished_at") or "unknown").replace(":", "")
        target = archive_dir / record_path.relative_to(runs_dir).with_suffix(f".{stamp}.json")
        target.parent.mkdir(parents=True, exist_ok=True)
        record_path.replace(target)
        log = record_path.with_suffix(".log")
        if log.exists():
            log.replace(target.with_suffix(".log"))
        moved.append(target)
    return moved


def forget_failed_fetches(raw_dir: Path) -> list[Path]:
    removed = []
    for status in sorted(Path(raw_dir).glob("*/fetch.json")):
        if json.loads(status.read_text())["status"] != "ok":
            status.unlink()
            removed.append(status)
    return removed
