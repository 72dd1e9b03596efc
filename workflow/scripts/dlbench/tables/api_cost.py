"""The API-cost table, from the appendix."""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from .. import files, stats
from ..metrics import METRICS
from ..registry import REGISTRY as FRAMEWORKS
from ..spec import parse_variant, variant_label
from . import CELL_KEYS, decimals, markdown_table, read_appendix, read_runs, summary, verdict_columns

# The API-cost table's columns, (metric, task): what a higher-level API or runtime costs over the framework
# it runs on (seed 002's question, answered for today), and where a run's time goes beside its loop's
# (seed 001's line profile: import and build, the first step where compilers compile).
API_COST_COLUMNS = (("latency_p50", "inference"), ("latency_p99", "inference"), ("inference_speed", "inference"),
                    ("train_speed", "train"), ("setup_time", "inference"), ("setup_time", "train"),
                    ("first_step_time", "train"))


# Seed 001's charts: milliseconds per step of training and of inference, the batch over the cell's speed
STEP_MS_COLUMNS = {"train": "train_speed", "inference": "inference_speed"}


SETTING_KEYS = [key for key in CELL_KEYS if key not in ("framework", "task")]


def peer_setting(setting: tuple) -> tuple:
    """The setting a framework's peer is read in: the same, but Keras's ``model.fit`` (variant ``-fit``) stands
    beside its backend's own loop, which has no fit."""
    values = dict(zip(SETTING_KEYS, setting))
    precision, compiled, batch, _ = parse_variant(values["variant"])
    return tuple({**values, "variant": variant_label(precision, compiled, batch)}.values())


def api_cost(table: pd.DataFrame, runs: pd.DataFrame | None = None, threshold: float = stats.THRESHOLD
             ) -> pd.DataFrame:
    """From the appendix's long table: per dataset, network, device and variant, each framework's estimate of
    every API_COST_COLUMNS column it measured and, for a framework that runs on another (the registry's
    ``runs_on``: Keras on its backend, ONNX Runtime on PyTorch's export), that estimate over the other's with the
    ratio's 95 % interval and verdict at ``threshold`` (``<column> ratio``, ``ratio_low``, ``ratio_high``,
    ``verdict``: dlbench.stats.ratio; Keras's fit over its backend's own loop: :func:`peer_setting`). With ``runs``
    (runs.csv, which has each run's batch): the milliseconds per training and inference step
    (:data:`STEP_MS_COLUMNS`), as seed 001's charts give them."""
    cells = {key: summary(cell) for key, cell in table.set_index([*SETTING_KEYS, "framework", "metric", "task"])
             .iterrows() if cell["n"]}
    if runs is not None:
        cells.update(_steps(cells, runs))
    order = list(FRAMEWORKS)

    def beside_its_peer(framework: str) -> tuple:  # each native framework, then those that run on it
        peer = FRAMEWORKS[framework].runs_on
        return order.index(peer or framework), peer is not None, order.index(framework)
    rows = []
    for setting, group in table.groupby(SETTING_KEYS, sort=True):
        for framework in sorted(group["framework"].unique(), key=beside_its_peer):
            peer = FRAMEWORKS[framework].runs_on
            row = dict(zip(SETTING_KEYS, setting), framework=framework, runs_on=peer)
            for metric, task in [*API_COST_COLUMNS, *(("step_ms", task) for task in STEP_MS_COLUMNS)]:
                own = cells.get((*setting, framework, metric, task))
                row[f"{metric} {task}"] = own.estimate if own else float("nan")
                theirs = cells.get((*peer_setting(setting), peer, metric, task))
                if own and theirs:
                    found = stats.ratio(theirs, own, threshold)
                    words = METRICS[metric].comparative if metric in METRICS else ("slower", "faster")
                    row.update({f"{metric} {task} {column}": values[0] for column, values in
                                verdict_columns([found], words).items()})
            rows.append(row)
    keys = [*SETTING_KEYS, "framework", "runs_on"]
    out = pd.DataFrame(rows) if rows else pd.DataFrame(columns=keys)
    unmeasured = [column for column in out.columns if column not in keys and out[column].isna().all()]
    return out.drop(columns=unmeasured)


def _steps(cells: dict, runs: pd.DataFrame) -> dict:
    """Each speed cell's milliseconds per step, 1000 x batch / images per second, as a cell of its own: on the log
    scale its runs' spread is the speed's, its centre the batch's log less the speed's."""
    batches = runs.groupby([*SETTING_KEYS, "framework", "task"])["batch_size_global"].first()
    steps = {}
    for task, metric in STEP_MS_COLUMNS.items():
        for key, speed in cells.items():
            batch = batches.get((*key[:-2], key[-1]))
            if key[-2:] == (metric, task) and speed.log and batch and pd.notna(batch):
                steps[(*key[:-2], "step_ms", task)] = stats.Summary(speed.n, math.log(1000 * batch) - speed.centre,
                                                                    speed.spread, True)
    return steps


def api_cost_markdown(cost: pd.DataFrame) -> str:
    """The API-cost table for a reader: one row per framework, each value with its ratio over the framework it runs
    on, that ratio's 95 % interval and verdict, where it has one."""
    columns = [f"{metric} {task}" for metric, task in [*(("step_ms", task) for task in STEP_MS_COLUMNS),
                                                       *API_COST_COLUMNS] if f"{metric} {task}" in cost]
    shown = cost[[*SETTING_KEYS, "framework", "runs_on"]].fillna({"runs_on": "—"})
    nothing = pd.Series("", index=cost.index)
    for column in columns:
        metric, task = column.split()
        label = f"ms per {task} step" if metric == "step_ms" else f"{column} ({METRICS[metric].unit})"
        ratios, verdicts = (cost.get(f"{column} {part}", nothing).fillna("") for part in ("ratio_text", "verdict"))
        shown[label] = [
            "—" if pd.isna(value) else f"{value:,.{decimals(value)}f}" + (f" ({ratio}, {verdict})" if ratio else "")
            for value, ratio, verdict in zip(cost[column], ratios, verdicts)]
    return ("# What an API costs, and where a run's time goes\n\nEach value is its cell's estimate; beside it, "
            "its ratio over the framework it runs on, the ratio's 95 % interval and verdict (docs/statistics.md)."
            "\n\n" + markdown_table(shown) + "\n")


def write_api_cost(appendix_csv: Path, runs_csv: Path, csv_out: Path, md_out: Path,
                   threshold: float = stats.THRESHOLD) -> None:
    cost = api_cost(read_appendix(appendix_csv), read_runs(runs_csv), threshold)
    files.write_text(csv_out, cost.to_csv(index=False))
    files.write_text(md_out, api_cost_markdown(cost))
