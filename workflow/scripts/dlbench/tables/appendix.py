"""runs.csv -> the Appendix-A-style table (each cell's estimate and 95 % interval over its repetitions:
dlbench.stats), long and wide, and the scaling that the figures draw from it."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import files, stats
from ..metrics import FLAGS, METRICS, UNSTEADY
from ..spec import gpu_count, parse_device
from . import (
    CELL_KEYS,
    compared,
    decimals,
    markdown_table,
    placements,
    read_runs,
    setting_order,
    settings,
    target_rank,
    verdict_columns,
)

# What a cell's text is, as the tables' titles say it
CELL_WORDS = "estimate [95 % confidence interval] over repetitions"

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


# What statistics.contended may say: whether a cell's contended runs count in its estimate
CONTENDED = ("leave_out", "keep")


def counted(runs: pd.DataFrame, metric: str, contended: str = "leave_out") -> tuple[pd.DataFrame, int]:
    """The measured runs (:func:`measured`) whose values make the cell's estimate, and how many were left out: a
    run flagged contended measured the other work beside it, so with ``leave_out`` it is left out wherever two or
    more clean runs remain (an interval needs two); with ``keep``, or too few clean ones, every run counts."""
    if contended not in CONTENDED:
        raise ValueError(f"statistics.contended: {contended!r} is not one of {', '.join(CONTENDED)}")
    values = measured(runs, metric)
    if contended == "keep" or not METRICS[metric].flagged:
        return values, 0
    clean = values[~values["contended"].astype(bool)]
    return (clean, len(values) - len(clean)) if 2 <= len(clean) < len(values) else (values, 0)


COLUMNS = ["metric", "unit", *CELL_KEYS, "n", "runs", "left_out", "estimate", "low", "high", "mean", "sd", "cv",
           "centre", "spread", "log", "cell", "flags"]


def appendix(runs: pd.DataFrame, contended: str = "leave_out") -> pd.DataFrame:
    """Long table: metric × dataset × network × framework × device; n, the ok runs that measured it and count
    (:func:`counted`; ``left_out``, those that do not); the estimate and its 95 % interval (dlbench.stats: the
    geometric mean on a metric's log scale), the descriptive mean, sd and cv, the summary a ratio needs (``centre``,
    ``spread``, ``log``: :func:`dlbench.tables.summary`), and the cell text."""
    out = []
    for metric, definition in METRICS.items():
        for cell, group in runs[runs["task"].isin(definition.tasks)].groupby(CELL_KEYS, sort=True):
            kept, left_out = counted(group, metric, contended)
            values = kept[metric].astype(float)
            row = dict(zip(CELL_KEYS, cell), metric=metric, unit=definition.unit, n=len(values), runs=len(group),
                       left_out=left_out)
            if len(values):
                summary = stats.summarise(values, definition.log)
                row["low"], row["high"] = stats.interval(summary)
                row.update(estimate=summary.estimate, centre=summary.centre, spread=summary.spread, log=summary.log)
                row["mean"], row["sd"] = values.mean(), values.std(ddof=1) if len(values) > 1 else float("nan")
                row["cv"] = row["sd"] / abs(row["mean"]) if row["mean"] else float("nan")
                unsteady = f"cv > {UNSTEADY:.0%}" if definition.steady and row["cv"] > UNSTEADY else ""
                left = measured(group, metric).index.difference(kept.index)  # their flags are not the estimate's
                flagged = flag_text(group.drop(index=left), metric) if definition.flagged else ""
                row["flags"] = ", ".join(mark for mark in (flagged, unsteady) if mark)
                row["cell"] = _format(row, group) + (f" [{row['flags']}]" if row["flags"] else "")
            else:
                row["flags"], row["cell"] = "", _why_missing(group, metric)
            out.append(row)
    return pd.DataFrame(out, columns=COLUMNS)


def _format(row: dict, group: pd.DataFrame) -> str:
    """``1,234 [1,180, 1,290] (n=3, cv 4.5%)``: the estimate and its 95 % interval (a cell of one run says it has
    none), the number of runs always, of how many where some did not count, and why not."""
    digits = decimals(row["estimate"])
    bounds = "" if pd.isna(row["low"]) else f" [{row['low']:,.{digits}f}, {row['high']:,.{digits}f}]"
    others = group["status"][group["status"] != "ok"].value_counts()
    not_counted = "".join(f", {count} {status}" for status, count in sorted(others.items()))
    if row["left_out"]:
        not_counted += f", {row['left_out']} contended left out"
    missing = "" if row["n"] == len(group) else f" of {len(group)}{not_counted}"
    variation = ", no interval" if row["n"] == 1 else "" if pd.isna(row["cv"]) else f", cv {row['cv']:.1%}"
    return f"{row['estimate']:,.{digits}f}{bounds} (n={row['n']}{missing}{variation})"


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


def write_appendix(runs_csv: Path, csv_out: Path, md_out: Path, tex_out: Path, hardware: Sequence[str] = (),
                   contended: str = "leave_out") -> None:
    table = appendix(read_runs(runs_csv), contended)
    files.write_text(csv_out, table.to_csv(index=False))
    wide = appendix_wide(table, hardware)
    files.write_text(md_out, f"# Benchmark results ({CELL_WORDS})\n\n" + markdown_table(wide) + "\n")
    files.write_text(tex_out, wide.to_latex(index=False, longtable=True, escape=True,
                                            caption=f"Benchmark results: {CELL_WORDS} (n = repetitions).",
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
                   "speedup_low", "speedup_high", "speedup_text", "verdict", "efficiency", "flags"]


def speedup(baseline: dict, cell: dict, devices: int, threshold: float) -> dict:
    """A speed-up row: ``cell`` over ``baseline`` with its 95 % interval and verdict (faster, slower, the same, not
    resolved: dlbench.stats.ratio at ``threshold``), and its efficiency (the speed-up ÷ ``devices``; none for one)."""
    found = compared(baseline, cell, threshold)
    columns = {name.replace("ratio", "speedup"): values[0]
               for name, values in verdict_columns([found], ("faster", "slower")).items()}
    return {**cell, "baseline": baseline["placement"], "devices": devices, **columns,
            "efficiency": found.value / devices if devices > 1 else float("nan")}


def scaling(table: pd.DataFrame, threshold: float = stats.THRESHOLD) -> pd.DataFrame:
    """From the appendix's long table, each training cell on several devices against the same framework's cell
    on one of the same target and machine (the thesis's 2 GPUs ÷ 1 GPU): the speed-up with its interval and verdict
    (:func:`speedup`) and the efficiency (speed-up ÷ devices)."""
    speed = training_speeds(table)
    one = speed.set_index([*SPEEDUP_KEYS, "hardware", "machine", "device"])
    rows = []
    for cell in speed.to_dict("records"):
        baseline, devices = scale(cell["device"])
        key = (*(cell[k] for k in SPEEDUP_KEYS), cell["hardware"], cell["machine"], baseline)
        if devices > 1 and key in one.index:
            rows.append(speedup(one.loc[key].to_dict(), cell, devices, threshold))
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)


def gpu_over_cpu(table: pd.DataFrame, hardware: Sequence[str] = (), threshold: float = stats.THRESHOLD
                 ) -> pd.DataFrame:
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
        rows.append(speedup(base, cell, 1, threshold))
    return pd.DataFrame(rows, columns=SPEEDUP_COLUMNS)
