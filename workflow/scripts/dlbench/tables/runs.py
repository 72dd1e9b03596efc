"""Run records -> runs.csv: one row per run, its identity, status, every metric and why one is missing."""
from __future__ import annotations

import json
from collections import Counter

import pandas as pd

from .. import stats
from ..metrics import FLAGS, METRICS
from ..record.provenance import machine
from ..registry import REGISTRY
from ..spec import run_variant
from . import CELL_KEYS, RUN_KEYS, first_line


def release(framework: str) -> str:
    """Which release of its framework a run's framework is (registry.Framework.release); today's for a name the
    registry no longer has (a merged record's)."""
    return REGISTRY[framework].release if framework in REGISTRY else "current"


def hardware(run: dict) -> str:
    """The config's hardware target the run ran on; empty where the config named none."""
    return run.get("hardware") or ""


# What a run's repetitions differ in and still measure one thing: which repetition, the seed that follows from
# it, where its data lay, and the run's bookkeeping. Everything else of the run's spec must be equal.
REPETITION_FIELDS = {"repetition", "seed", "data_dir"}
SET_APART = "set apart"  # the status of an ok run that is not equal to its cell's others (:func:`setup`)


def setup(record: dict) -> dict[str, str]:
    """What a run's measurement depends on besides its cell: its spec (but :data:`REPETITION_FIELDS`), its
    framework's version, dlbench's version, its Python and installed packages. A cell averages only runs whose
    setups are equal."""
    run, provenance = record["run"], record["provenance"]
    found = {key: str(value) for key, value in sorted(run.items()) if key not in REPETITION_FIELDS}
    found.update({"dlbench": str(provenance.get("dlbench_version")), "python": str(provenance.get("python"))})
    found.update({f"package {name}": str(version) for name, version in sorted((provenance.get("packages") or {})
                                                                               .items())})
    return found


def _difference(setup_here: dict, setup_there: dict) -> str:
    keys = [key for key in dict.fromkeys([*setup_here, *setup_there]) if setup_here.get(key) != setup_there.get(key)]
    shown = [f"{key} {setup_here.get(key, 'absent')} here, {setup_there.get(key, 'absent')} there" for key in keys[:3]]
    return "; ".join(shown) + (f"; and {len(keys) - 3} more" if len(keys) > 3 else "")


def _unequal_runs_set_apart(table: pd.DataFrame, setups: list[dict]) -> pd.DataFrame:
    """In each cell, the ok runs whose setup differs from the cell's most common one (on a tie, the newest run's)
    become :data:`SET_APART`, their reason the difference: a cell averages only equals. Runs that failed keep their
    status; they count in no mean."""
    if not len(table):
        return table
    keys = [json.dumps(found, sort_keys=True) for found in setups]
    table = table.assign(_setup=keys, _order=range(len(table)))
    for _, cell in table.groupby(CELL_KEYS, sort=False, dropna=False):
        counts = Counter(cell["_setup"])
        newest = cell.sort_values("started_at", na_position="first")["_setup"].iloc[-1]
        most = max(counts.values())
        kept = newest if counts[newest] == most else next(key for key, count in counts.items() if count == most)
        reference = cell[cell["_setup"] == kept]["record"].iloc[0]
        for index in cell.index[(cell["_setup"] != kept) & (cell["status"] == "ok")]:
            difference = _difference(setups[table.at[index, "_order"]], json.loads(kept))
            table.at[index, "status"] = SET_APART
            table.at[index, "reason"] = f"not equal to its cell's other runs (as {reference}): {difference}"
    return table.drop(columns=["_setup", "_order"])


def runs_table(records: list[dict]) -> pd.DataFrame:
    """One row per run: its identity, status, every metric, and why a metric is missing. A run not equal to its
    cell's others is set apart (:func:`_unequal_runs_set_apart`)."""
    rows = []
    for record in records:
        run = record["run"]
        row = {key: run[key] for key in RUN_KEYS if key not in ("hardware", "variant", "machine")}
        row.update(hardware=hardware(run), variant=run_variant(run),
                   machine=machine(record))
        row.update(status=record["status"], reason=first_line(record["reason"]),
                   framework_version=run.get("framework_version"), release=release(run["framework"]),
                   batch_size_global=run["batch_size_global"],
                   iterations=run["iterations"], warmup_iterations=run["warmup_iterations"],
                   threads=run["threads"], final_loss=record["quality"]["final_loss"],
                   epochs=run.get("epochs"), target_accuracy=run.get("target_accuracy"),
                   input_size=run.get("input_size"),
                   contention_share=record["timing"]["contention_share"],
                   nodes_share_machine=(record.get("execution") or {}).get("nodes_share_machine"),
                   cpu_model=record["provenance"].get("cpu_model"),
                   gpu_model=", ".join(sorted({gpu["name"] or "unnamed GPU"
                                               for gpu in record["provenance"].get("gpus") or []})),
                   started_at=record["provenance"].get("started_at"), record=record["path"])
        for metric, definition in METRICS.items():
            block = (record.get(definition.section) or {}) if run["task"] in definition.tasks else {}
            field = definition.field if definition.over_gpus == "sum" else f"{definition.field}_per_gpu"
            row[metric] = block.get(field)
            if definition.over_gpus == "mean" and row[metric] is not None:
                row[metric] = sum(row[metric]) / len(row[metric])
            unrecorded = block and field not in block
            reason = block.get("reasons", {}).get(field) or (
                "not measured by the older dlbench that wrote this record" if unrecorded else "")
            row[f"{metric}_reason"] = first_line(reason) if row[metric] is None else ""
        row.update(step_steadiness(record))
        row.update(flags(row))
        rows.append(row)
    columns = RUN_KEYS + ["status", "reason"]
    table = pd.DataFrame(rows, columns=columns + [c for r in rows[:1] for c in r if c not in columns])
    table = table.assign(machine=_with_unknown_machines_placed(table))
    return _unequal_runs_set_apart(table, [setup(record) for record in records])


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


# The tasks whose timed steps follow a warm-up and should have settled (an accuracy run's include its first steps)
SETTLING_TASKS = ("train", "inference", "profile")


def step_steadiness(record: dict) -> dict:
    """Whether an ok run's timed steps (warm-up excluded) had settled (dlbench.stats.steady_state): the median
    step's shift from their first half to their second, and ``unsteady_steps`` 1 where they had not, 0 where they
    had; both None where the run is not ok, its task's steps include its first, or it timed too few to judge."""
    run = record["run"]
    judged = stats.steady_state(record["timing"]["iteration_seconds"][run["warmup_iterations"]:]) \
        if record["status"] == "ok" and run["task"] in SETTLING_TASKS else None
    if judged is None or judged.steady is None:
        return {"steady_shift": None, "unsteady_steps": None}
    return {"steady_shift": judged.shift, "unsteady_steps": float(not judged.steady)}


def flags(row: dict) -> dict:
    """A run's flags: whether its share exceeds each flag's threshold (a share not measured: no flag)."""
    return {name: row[flag.column] is not None and not pd.isna(row[flag.column]) and row[flag.column] > flag.above
            for name, flag in FLAGS.items()}
