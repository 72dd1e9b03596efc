"""runs.csv -> the Appendix-A-style table (mean ± sd over repetitions), long and wide, and the scaling
that the figures draw from it."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ..metrics import FLAGS, METRICS, UNSTEADY
from ..spec import gpu_count, parse_device
from . import CELL_KEYS, decimals, markdown_table, placements, read_runs, setting_order, settings, target_rank

# What a speed-up holds fixed: the same framework's network on one dataset, in one precision
SPEEDUP_KEYS = ["dataset", "network", "framework", "variant"]


def flag_text(group: pd.DataFrame, metric: str) -> str:
    """The cell's marks on ``metric``, ``input-bound 2/3, contended 1/3``: how many of its ok runs carry each flag
    that bears on it."""
    ok = group[group["status"] == "ok"]
    marks = [f"{flag.words} {int(ok[name].astype(bool).sum())}/{len(ok)}" for name, flag in FLAGS.items()
             if (not flag.metrics or metric in flag.metrics) and len(ok) and ok[name].astype(bool).any()]
    return ", ".join(marks)


def measured(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The runs whose value of ``metric`` counts: finished ``ok`` and measured. A failed run's partial
    readings (its memory until it crashed, say) stay in runs.csv but never enter a mean, a spread or a bar."""
    return runs[(runs["status"] == "ok") & runs[metric].notna()]


def appendix(runs: pd.DataFrame) -> pd.DataFrame:
    """Long table: metric × dataset × network × framework × device, mean, sd, n (the ok runs that
    measured it), and the cell text."""
    out = []
    for metric, definition in METRICS.items():
        for cell, group in runs[runs["task"].isin(definition.tasks)].groupby(CELL_KEYS, sort=True):
            values = measured(group, metric)[metric].astype(float)
            row = dict(zip(CELL_KEYS, cell), metric=metric, unit=definition.unit, n=len(values), runs=len(group))
            if len(values):
                row["mean"], row["sd"] = values.mean(), values.std(ddof=1) if len(values) > 1 else float("nan")
                row["cv"] = row["sd"] / abs(row["mean"]) if row["mean"] else float("nan")
                unsteady = f"cv > {UNSTEADY:.0%}" if definition.steady and row["cv"] > UNSTEADY else ""
                flagged = flag_text(group, metric) if definition.flagged else ""
                row["flags"] = ", ".join(mark for mark in (flagged, unsteady) if mark)
                row["cell"] = _format(row["mean"], row["sd"], row["cv"], len(values), group) + (
                    f" [{row['flags']}]" if row["flags"] else "")
            else:
                row["mean"] = row["sd"] = row["cv"] = float("nan")
                row["flags"], row["cell"] = "", _why_missing(group, metric)
            out.append(row)
    return pd.DataFrame(out, columns=["metric", "unit", *CELL_KEYS, "n", "runs", "mean", "sd", "cv", "cell", "flags"])


def _format(mean: float, sd: float, cv: float, n: int, group: pd.DataFrame) -> str:
    """``1,234 ± 56 (n=3, cv 4.5%)``: the number of runs always, of how many where some did not count."""
    digits = decimals(mean)
    spread = "" if pd.isna(sd) else f" ± {sd:,.{digits}f}"
    others = group["status"][group["status"] != "ok"].value_counts()
    not_counted = "".join(f", {count} {status}" for status, count in sorted(others.items()))
    missing = "" if n == len(group) else f" of {len(group)}{not_counted}"
    variation = "" if pd.isna(cv) else f", cv {cv:.1%}"
    return f"{mean:,.{digits}f}{spread} (n={n}{missing}{variation})"


def _why_missing(group: pd.DataFrame, metric: str) -> str:
    """Why a cell has no value: the ok runs' own reason for the metric, which they could not measure
    (a CPU run has no GPU power), else every distinct status and reason of its runs (all failed or
    unavailable), with how many runs each where they differ."""
    ok = group[group["status"] == "ok"]
    if len(ok):
        reasons = ok[f"{metric}_reason"].replace("", pd.NA).dropna()
        return f"unavailable: {reasons.iloc[0] if len(reasons) else 'not recorded'}"
    distinct = group.groupby(["status", "reason"], sort=False).size()
    if len(distinct) == 1:
        (status, reason), = distinct.index
        return f"{status}: {reason}"
    return "; ".join(f"{status}: {reason} ({runs} of {len(group)})" for (status, reason), runs in distinct.items())


def appendix_wide(table: pd.DataFrame, hardware: Sequence[str] = ()) -> pd.DataFrame:
    """The thesis's layout: one row per metric/dataset/network/framework, one column per placement (hardware
    target and device: :func:`tables.placements`; targets in the order ``hardware`` names them) and variant
    (precision, compiled)."""
    wide = table.assign(setting=settings(table)).pivot_table(
        index=["metric", "unit", "dataset", "network", "framework"], columns="setting", values="cell",
        aggfunc="first", sort=False)[setting_order(table, hardware)]
    wide.columns.name = None
    return wide.reset_index()


def write_appendix(runs_csv: Path, csv_out: Path, md_out: Path, tex_out: Path, hardware: Sequence[str] = ()) -> None:
    table = appendix(read_runs(runs_csv))
    table.to_csv(csv_out, index=False)
    wide = appendix_wide(table, hardware)
    md_out.write_text("# Benchmark results (mean ± sd over repetitions)\n\n" + markdown_table(wide) + "\n")
    tex_out.write_text(wide.to_latex(index=False, longtable=True, escape=True,
                                     caption="Benchmark results: mean ± sd over repetitions (n = repetitions).",
                                     label="tab:appendix"))


def scale(device: str) -> tuple[str, int]:
    """The one-device run a device's speed is set against, and how many devices it has: ``gpu2`` -> (gpu1, 2),
    ``2xgpu1`` -> (gpu1, 2), ``2xcpu`` -> (cpu, 2), ``cpu`` -> (cpu, 1)."""
    processes, _ = parse_device(device)
    gpus = gpu_count(device)
    return ("gpu1", gpus) if gpus else ("cpu", processes)


def training_speeds(table: pd.DataFrame) -> pd.DataFrame:
    """The appendix's measured training speeds, each with its placement's label (:func:`tables.placements`)."""
    speed = table[(table["metric"] == "train_speed") & (table["task"] == "train") & (table["n"] > 0)]
    return speed.assign(placement=placements(speed))


SPEEDUP_COLUMNS = [*SPEEDUP_KEYS, "hardware", "machine", "device", "placement", "baseline", "devices", "speedup",
                   "efficiency", "flags"]


def scaling(table: pd.DataFrame) -> pd.DataFrame:
    """From the appendix's long table, each training cell on several devices against the same framework's cell
    on one of the same target and machine (the thesis's 2 GPUs ÷ 1 GPU): the speed-up and the efficiency
    (speed-up ÷ devices)."""
    speed = training_speeds(table)
    one = speed.set_index([*SPEEDUP_KEYS, "hardware", "machine", "device"])
    rows = []
    for cell in speed.to_dict("records"):
        baseline, devices = scale(cell["device"])
        key = (*(cell[k] for k in SPEEDUP_KEYS), cell["hardware"], cell["machine"], baseline)
        if devices > 1 and key in one.index:
            speedup = cell["mean"] / one.at[key, "mean"]
            rows.append({**cell, "baseline": one.at[key, "placement"], "devices": devices, "speedup": speedup,
                         "efficiency": speedup / devices})
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)


def gpu_over_cpu(table: pd.DataFrame, hardware: Sequence[str] = ()) -> pd.DataFrame:
    """From the appendix's long table, each training cell on one GPU against the same framework's cell on one CPU
    process (the thesis's "20x-30x from CPU to GPU"): its own target's CPU where that ran it, else the first
    target's (in the order ``hardware`` names them, then by name) that did. The baseline column names it."""
    speed = training_speeds(table)
    cpus = speed[speed["device"] == "cpu"].groupby(SPEEDUP_KEYS)
    rows = []
    for cell in speed[speed["device"].map(lambda device: scale(device) == ("gpu1", 1))].to_dict("records"):
        key = tuple(cell[k] for k in SPEEDUP_KEYS)
        if key not in cpus.groups:
            continue
        base = min(cpus.get_group(key).to_dict("records"), key=lambda cpu: (
            cpu["hardware"] != cell["hardware"], target_rank(cpu["hardware"], hardware)))
        rows.append({**cell, "baseline": base["placement"], "devices": 1, "speedup": cell["mean"] / base["mean"],
                     "efficiency": float("nan")})
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)
