"""Run records -> runs.csv: one row per run, its identity, status, every metric and why one is missing."""
from __future__ import annotations

from collections import Counter

import pandas as pd

from ..metrics import FLAGS, METRICS
from ..spec import gpu_count, run_variant
from . import CELL_KEYS, RUN_KEYS, first_line


def hardware(run: dict) -> str:
    """The config's hardware target the run ran on; empty where the config named none."""
    return run.get("hardware") or ""


def machine(record: dict) -> str | None:
    """The measured identity of what a run ran on, which a cell's runs must share to be averaged: its GPUs'
    model (``NVIDIA H100 80GB HBM3``; ``1x Tesla K20m + 1x Tesla P100-PCIE-16GB`` where they differ; how many
    is the device's), or for a CPU run the node's CPU model and cores; None where the record does not say (a
    GPU run that failed before it held its GPUs)."""
    provenance = record["provenance"]
    if gpu_count(record["run"]["device"]):
        models = Counter(gpu["name"] for gpu in provenance.get("gpus") or [])
        if len(models) > 1:
            return " + ".join(f"{count}x {model}" for model, count in sorted(models.items()))
        return next(iter(models), None)
    return f"{provenance['cpu_model']}, {provenance['cores']} cores" if provenance.get("cpu_model") else None


def runs_table(records: list[dict]) -> pd.DataFrame:
    """One row per run: its identity, status, every metric, and why a metric is missing."""
    rows = []
    for record in records:
        run = record["run"]
        row = {key: run[key] for key in RUN_KEYS if key not in ("hardware", "variant", "machine")}
        row.update(hardware=hardware(run), variant=run_variant(run),
                   machine=machine(record))
        row.update(status=record["status"], reason=first_line(record["reason"]),
                   framework_version=run.get("framework_version"), batch_size_global=run["batch_size_global"],
                   iterations=run["iterations"], warmup_iterations=run["warmup_iterations"],
                   threads=run["threads"], final_loss=record["quality"]["final_loss"],
                   epochs=run.get("epochs"), target_accuracy=run.get("target_accuracy"),
                   input_size=run.get("input_size"),
                   contention_share=record["timing"]["contention_share"],
                   nodes_share_machine=(record.get("execution") or {}).get("nodes_share_machine"),
                   cpu_model=record["provenance"].get("cpu_model"),
                   gpu_model=", ".join(sorted({gpu["name"] for gpu in record["provenance"].get("gpus") or []})),
                   started_at=record["provenance"].get("started_at"), record=record["path"])
        for metric, spec in METRICS.items():
            block = (record.get(spec.section) or {}) if run["task"] in spec.tasks else {}
            row[metric] = block.get(spec.field)
            reason = block.get("reasons", {}).get(spec.field) or (
                "not measured by the older dlbench that wrote this record" if block and spec.field not in block else "")
            row[f"{metric}_reason"] = first_line(reason) if row[metric] is None else ""
        row.update(flags(row))
        rows.append(row)
    columns = RUN_KEYS + ["status", "reason"]
    table = pd.DataFrame(rows, columns=columns + [c for r in rows[:1] for c in r if c not in columns])
    return table.assign(machine=_with_unknown_machines_placed(table))


def _with_unknown_machines_placed(table: pd.DataFrame) -> pd.Series:
    """Each run's machine; a run that does not name its machine takes its cell's where the cell's other runs
    name one alone (the cell's run that failed before it held its GPUs), else says it is unknown."""
    cell = [key for key in CELL_KEYS if key != "machine"]
    known = table.dropna(subset=["machine"]).groupby(cell)["machine"].unique()
    def placed(row) -> str:
        if pd.notna(row["machine"]):
            return row["machine"]
        machines = known.get(tuple(row[cell]), [])
        return machines[0] if len(machines) == 1 else "unknown"
    return table.apply(placed, axis=1) if len(table) else table["machine"]


def flags(row: dict) -> dict:
    """A run's flags: whether its share exceeds each flag's threshold (a share not measured: no flag)."""
    return {name: row[flag.column] is not None and not pd.isna(row[flag.column]) and row[flag.column] > flag.above
            for name, flag in FLAGS.items()}
