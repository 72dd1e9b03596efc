"""The tables: one route from run records to numbers. The records become runs.csv (:mod:`.runs`), runs.csv
becomes the appendix (:mod:`.appendix`: every metric's cells, an estimate and its interval), and the tables of
cells (api_cost, accuracy, thesis) and the figures of cells (bars, heatmaps, scaling) read their numbers from the
appendix (a cell's bar figures make their cell's rows of it from its records with the same two functions, so that
rebuilding one waits for no other run). The tables and figures of a record's own series read the records: the
layers table and its two figures (a profile run's steps), the iteration times and the accuracy curve.

Aggregation only reads records; it never writes beside them.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import stats
from ..metrics import FLAGS, METRICS
from ..spec import PRECISIONS, parse_variant
from ..tasks import TASKS

# Where a cell ran: the config's hardware target (empty where the config names none) and device, and the measured
# identity of the machine (:func:`dlbench.record.provenance.machine`): a cell's runs are averaged only on one machine.
RUN_KEYS = ["framework", "dataset", "data_mode", "network", "hardware", "device", "machine", "variant", "task",
            "repetition"]
CELL_KEYS = ["dataset", "network", "framework", "hardware", "device", "machine", "variant", "task"]
NOT_RECORDED = "not recorded"  # the machine of a runs.csv made before runs named theirs


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if text and text.strip() else ""


def decimals(value: float) -> int:
    """Decimals a reader needs: none from 100 up, three below 1."""
    return 0 if abs(value) >= 100 else 2 if abs(value) >= 1 else 3


def summary(cell, prefix: str = "") -> stats.Summary:
    """An appendix row's values as dlbench.stats summarises them (its n, centre, spread and scale), read from the
    columns named after ``prefix`` (``a_``: a comparison's set A)."""
    n = int(cell[f"{prefix}n"])
    return stats.Summary(n, float(cell[f"{prefix}centre"]), float(cell[f"{prefix}spread"]),
                         bool(cell[f"{prefix}log"]) if n else False)


def compared(baseline, cell, threshold: float = stats.THRESHOLD) -> stats.Ratio:
    """Appendix row ``cell`` over appendix row ``baseline``: the ratio of their estimates, its 95 % interval and
    verdict (:func:`dlbench.stats.ratio`)."""
    return stats.ratio(summary(baseline), summary(cell), threshold)


def verdict_columns(ratios: Sequence[stats.Ratio], words: tuple[str, str] = (stats.HIGHER, stats.LOWER)
                    ) -> dict[str, list]:
    """A table's columns for its ratios: each ratio, its interval's bounds, the ratio as text and the verdict in
    ``words`` for above and below 1 (faster, slower: Metric.comparative), else the same, or not resolved and why."""
    return {"ratio": [r.value for r in ratios], "ratio_low": [r.low for r in ratios],
            "ratio_high": [r.high for r in ratios], "ratio_text": [r.text() for r in ratios],
            "verdict": [r.words(*words) for r in ratios]}


def several_machines(table: pd.DataFrame) -> bool:
    """Whether a target's device in ``table`` ran on more than one machine (one node's CPU and GPUs are one
    each)."""
    return bool(len(table)) and table.groupby(["hardware", "device"])["machine"].nunique().max() > 1


def placements(table: pd.DataFrame) -> pd.Series:
    """Each row's device, after its hardware target where the table has named ones and its machine where a
    target's device ran on several: ``p100: gpu1``, ``NVIDIA H100 80GB HBM3: gpu1``."""
    named = (table["hardware"] != "").any()
    where = table["hardware"] if named else pd.Series("", index=table.index)
    if several_machines(table):
        where = where + (", " if named else "") + table["machine"]
    return (where + ": ").where(where != "", "") + table["device"]


def settings(table: pd.DataFrame) -> pd.Series:
    """Each row's placement (:func:`placements`), its variant where the table has another than plain fp32, and
    its task unless it trains: the columns of the appendix and the bars of a figure, so that a cell's targets,
    machines, variants and tasks stand side by side."""
    setting = placements(table)
    if set(table["variant"]) != {"fp32"}:
        setting = setting + " " + table["variant"]
    return setting + table["task"].map(lambda task: "" if task == "train" else f" {task}")


def target_rank(target: str, hardware: Sequence[str]) -> tuple[int, str]:
    """Where a hardware target stands: in the order ``hardware`` (the config's) names targets, one it does not
    name after them, by name."""
    return (list(hardware).index(target), "") if target in hardware else (len(hardware), target)


def setting_order(table: pd.DataFrame, hardware: Sequence[str] = ()) -> list[str]:
    """The settings of ``table`` by hardware target (:func:`target_rank`), machine where a device ran on several,
    device, then precision (as spec.PRECISIONS lists them), eager first, smaller batch first, Keras's
    train_on_batch before its fit, then task (as tasks.TASKS lists them)."""
    several = several_machines(table)

    def key(row) -> tuple:
        precision, compiled, batch, fit = parse_variant(row.variant)
        return (target_rank(row.hardware, hardware), row.machine if several else "", row.device,
                list(PRECISIONS).index(precision), compiled, batch or 0, fit, list(TASKS).index(row.task))
    rows = table[["hardware", "machine", "device", "variant", "task"]].drop_duplicates()
    rows = rows.assign(setting=settings(rows))
    return [row.setting for row in sorted(rows.itertuples(), key=key)]


def read_runs(runs_csv: Path) -> pd.DataFrame:
    """runs.csv as :func:`runs_table` made it: an empty reason is no reason, an empty number is missing.
    A metric that is not a finite number (non-negative unless the metric is signed) is refused, naming the
    file, its line and column: a runs.csv may come from elsewhere (make compare), and one without the columns
    that name a run (empty, or another table) is refused naming the file and what it lacks."""
    try:
        raw = pd.read_csv(runs_csv, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise ValueError(f"{runs_csv} is empty: not a runs table (make it with snakemake results/tables/runs.csv)") \
            from None
    lacking = [key for key in (*RUN_KEYS, "status") if key not in raw.columns and key not in ("hardware", "machine")]
    if lacking:
        raise ValueError(f"{runs_csv} is not a runs table: it has no {', '.join(lacking)} column "
                         f"(its columns: {', '.join(raw.columns[:8])}{' ...' if len(raw.columns) > 8 else ''})")
    for metric in METRICS.keys() & set(raw.columns):
        given = raw[metric] != ""
        numbers = pd.to_numeric(raw[metric].where(given), errors="coerce")
        wrong = given & ~(numbers.abs() < float("inf")) | ((numbers < 0) & (not METRICS[metric].signed))
        if wrong.any():
            line = wrong.idxmax()
            allowed = "a finite number" + ("" if METRICS[metric].signed else " ≥ 0")
            raise ValueError(f"{runs_csv}, line {line + 2}, {metric}: {raw.at[line, metric]!r} is not a measurement "
                             f"(allowed: {allowed}, or empty where it was not measured)")
    # words, and versions, which are not numbers (2.10 is not 2.1)
    words = {c: str for c in raw.columns if c in ("reason", "hardware", "machine", "framework_version")
             or c.endswith("_reason")}
    runs = pd.read_csv(runs_csv, dtype=words, keep_default_na=False,
                       na_values={c: [""] for c in raw.columns if c not in words})
    for key, before_0_26 in (("hardware", ""), ("machine", NOT_RECORDED)):  # no target, no machine named
        if key not in runs:
            runs.insert(RUN_KEYS.index(key), key, before_0_26)
    older = {**{metric: float("nan") for metric in METRICS if metric not in runs},  # an older dlbench's table
             **{f"{metric}_reason": "not measured by the older dlbench that wrote this table" for metric in METRICS
                if f"{metric}_reason" not in runs},
             **{flag: False for flag in FLAGS if flag not in runs}}
    return runs.assign(**older) if older else runs


def read_appendix(appendix_csv: Path) -> pd.DataFrame:
    """appendix.csv as :func:`.appendix.appendix` made it: a cell without flags or hardware target has none (not
    a missing value)."""
    words = ("flags", "cell", "hardware", "machine")
    table = pd.read_csv(appendix_csv, dtype=dict.fromkeys(words, str))
    for key, before_0_26 in (("hardware", ""), ("machine", NOT_RECORDED)):  # no target, no machine named
        if key not in table:
            table.insert(table.columns.get_loc("device") + (key == "machine"), key, before_0_26)
    return table.fillna(dict.fromkeys(words[:3], ""))


HTML_OPENING = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_table(table: pd.DataFrame) -> str:
    """``table`` as Markdown, its text cells escaped: a reason's ``|`` stays in its cell, its HTML is text
    (a ``<`` that could open a tag or a comment is ``&lt;``; "a < b" stays as it is), a line break a space. Its
    ``hardware`` column is left out where the config named no target (every value empty)."""
    def escaped(value):
        if not isinstance(value, str):
            return value
        return HTML_OPENING.sub("&lt;", " ".join(value.split("\n"))).replace("|", "\\|")
    if "hardware" in table and (table["hardware"].fillna("") == "").all():
        table = table.drop(columns="hardware")
    return table.map(escaped).rename(columns=escaped).to_markdown(index=False)
