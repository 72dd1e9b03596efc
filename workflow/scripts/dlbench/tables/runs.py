"""Run records -> runs.csv: one row per run, its identity, status, every metric and why one is missing."""
from __future__ import annotations

import pandas as pd

from ..metrics import FLAGS, METRICS
from ..spec import variant_label
from . import RUN_KEYS, first_line


def runs_table(records: list[dict]) -> pd.DataFrame:
    """One row per run: its identity, status, every metric, and why a metric is missing."""
    rows = []
    for record in records:
        run = record["run"]
        row = {key: run[key] for key in RUN_KEYS if key != "variant"}
        row["variant"] = variant_label(run["precision"], run["compile"])
        row.update(status=record["status"], reason=first_line(record["reason"]),
                   framework_version=run.get("framework_version"), batch_size_global=run["batch_size_global"],
                   iterations=run["iterations"], warmup_iterations=run["warmup_iterations"],
                   threads=run["threads"], final_loss=record["quality"]["final_loss"],
                   epochs=run.get("epochs"), target_accuracy=run.get("target_accuracy"),
                   input_size=run.get("input_size"),
                   contention_share=record["timing"]["contention_share"],
                   cpu_model=record["provenance"].get("cpu_model"),
                   gpu_model=", ".join(sorted({gpu["name"] for gpu in record["provenance"].get("gpus") or []})),
                   started_at=record["provenance"].get("started_at"), record=record["path"])
        for metric, spec in METRICS.items():
            block = (record.get(spec.section) or {}) if run["task"] in spec.tasks else {}
            row[metric] = block.get(spec.field)
            reason = block.get("reasons", {}).get(spec.field, "")
            row[f"{metric}_reason"] = first_line(reason) if row[metric] is None else ""
        row.update(flags(row))
        rows.append(row)
    columns = RUN_KEYS + ["status", "reason"]
    return pd.DataFrame(rows, columns=columns + [c for r in rows[:1] for c in r if c not in columns])


def flags(row: dict) -> dict:
    """A run's flags: whether its share exceeds each flag's threshold (a share not measured: no flag)."""
    return {name: row[flag.column] is not None and not pd.isna(row[flag.column]) and row[flag.column] > flag.above
            for name, flag in FLAGS.items()}
