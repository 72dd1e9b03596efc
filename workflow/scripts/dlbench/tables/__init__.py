"""The tables: one route from run records to numbers. The records become runs.csv (:mod:`.runs`), runs.csv
becomes the appendix (:mod:`.appendix`: every metric's cells, mean ± sd), and every other table and every
figure reads its numbers from the appendix (a cell's bar figures make their cell's rows of it from its records
with the same two functions, so that rebuilding one waits for no other run).

Aggregation only reads records; it never writes beside them.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from ..metrics import METRICS
from ..spec import PRECISIONS, parse_variant
from ..tasks import TASKS

# A cell's runs are averaged only where they ran on one machine (:func:`.runs.machine`): its measured identity
# is a key of the cell, beside the device.
RUN_KEYS = ["framework", "dataset", "data_mode", "network", "device", "machine", "variant", "task", "repetition"]
CELL_KEYS = ["dataset", "network", "framework", "device", "machine", "variant", "task"]
NOT_RECORDED = "not recorded"  # the machine of a runs.csv made before runs named theirs


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if text and text.strip() else ""


def decimals(value: float) -> int:
    """Decimals a reader needs: none from 100 up, three below 1."""
    return 0 if abs(value) >= 100 else 2 if abs(value) >= 1 else 3


def ratio_words(ratios: pd.Series) -> list[str]:
    """Ratios as a table prints them: ``×1.23``, a dash where there is none."""
    return ["—" if pd.isna(value) else f"×{value:.3g}" for value in ratios]


def several_machines(table: pd.DataFrame) -> bool:
    """Whether a device of ``table`` ran on more than one machine (one node's CPU and GPUs are one each)."""
    return bool(len(table)) and table.groupby("device")["machine"].nunique().max() > 1


def settings(table: pd.DataFrame) -> pd.Series:
    """Each row's device (after its machine where a device ran on several), its variant where the table has
    another than plain fp32, and its task unless it trains: the columns of the appendix and the bars of a
    figure, so that a cell's machines, variants and tasks stand side by side."""
    setting = table["device"]
    if several_machines(table):
        setting = table["machine"] + ": " + setting
    if set(table["variant"]) != {"fp32"}:
        setting = setting + " " + table["variant"]
    return setting + table["task"].map(lambda task: "" if task == "train" else f" {task}")


def setting_order(table: pd.DataFrame) -> list[str]:
    """The settings of ``table`` by machine where a device ran on several, device, then precision (as
    spec.PRECISIONS lists them), eager first, then task (as tasks.TASKS lists them)."""
    several = several_machines(table)

    def key(row) -> tuple:
        precision, compiled = parse_variant(row.variant)
        return (row.machine if several else "", row.device, list(PRECISIONS).index(precision), compiled,
                list(TASKS).index(row.task))
    rows = table[["machine", "device", "variant", "task"]].drop_duplicates()
    rows = rows.assign(setting=settings(rows))
    return [row.setting for row in sorted(rows.itertuples(), key=key)]


def read_runs(runs_csv: Path) -> pd.DataFrame:
    """runs.csv as :func:`runs_table` made it: an empty reason is no reason, an empty number is missing.
    A metric that is not a finite number (non-negative unless the metric is signed) is refused, naming the
    file, its line and column: a runs.csv may come from elsewhere (make compare)."""
    raw = pd.read_csv(runs_csv, dtype=str, keep_default_na=False)
    for metric in METRICS.keys() & set(raw.columns):
        given = raw[metric] != ""
        numbers = pd.to_numeric(raw[metric].where(given), errors="coerce")
        wrong = given & ~(numbers.abs() < float("inf")) | ((numbers < 0) & (not METRICS[metric].signed))
        if wrong.any():
            line = wrong.idxmax()
            allowed = "a finite number" + ("" if METRICS[metric].signed else " ≥ 0")
            raise ValueError(f"{runs_csv}, line {line + 2}, {metric}: {raw.at[line, metric]!r} is not a measurement "
                             f"(allowed: {allowed}, or empty where it was not measured)")
    words = {c: str for c in raw.columns if c in ("reason", "machine") or c.endswith("_reason")}
    runs = pd.read_csv(runs_csv, dtype=words, keep_default_na=False,
                       na_values={c: [""] for c in raw.columns if c not in words})
    if "machine" not in runs:  # from dlbench < 0.26
        runs.insert(RUN_KEYS.index("machine"), "machine", NOT_RECORDED)
    return runs


def read_appendix(appendix_csv: Path) -> pd.DataFrame:
    """appendix.csv as :func:`.appendix.appendix` made it: a cell without flags has none (not a missing value)."""
    return pd.read_csv(appendix_csv, dtype={"flags": str, "cell": str}).fillna({"flags": "", "cell": ""})


HTML_OPENING = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_table(table: pd.DataFrame) -> str:
    """``table`` as Markdown, its text cells escaped: a reason's ``|`` stays in its cell, its HTML is text
    (a ``<`` that could open a tag or a comment is ``&lt;``; "a < b" stays as it is), a line break a space."""
    def escaped(value):
        if not isinstance(value, str):
            return value
        return HTML_OPENING.sub("&lt;", " ".join(value.split("\n"))).replace("|", "\\|")
    return table.map(escaped).rename(columns=escaped).to_markdown(index=False)
