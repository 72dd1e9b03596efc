"""The API-cost table, from the appendix."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..metrics import METRICS
from ..registry import REGISTRY as FRAMEWORKS
from ..spec import parse_variant, variant_label
from . import CELL_KEYS, decimals, markdown_table, read_appendix, read_runs

# The API-cost table's columns, (metric, task): what a higher-level API or runtime costs over the framework
# it runs on (seed 002's question, answered for today), and where a run's time goes beside its loop's
# (seed 001's line profile: import and build, the first step where compilers compile).
API_COST_COLUMNS = (("latency_p50", "inference"), ("latency_p99", "inference"), ("inference_speed", "inference"),
                    ("train_speed", "train"), ("setup_time", "inference"), ("setup_time", "train"),
                    ("first_step_time", "train"))


# Seed 001's charts: milliseconds per step of training and of inference, the batch over the cell's mean speed
STEP_MS_COLUMNS = {"train": "train_speed", "inference": "inference_speed"}


SETTING_KEYS = [key for key in CELL_KEYS if key not in ("framework", "task")]


def peer_setting(setting: tuple) -> tuple:
    """The setting a framework's peer is read in: the same, but Keras's ``model.fit`` (variant ``-fit``) stands
    beside its backend's own loop, which has no fit."""
    values = dict(zip(SETTING_KEYS, setting))
    precision, compiled, batch, _ = parse_variant(values["variant"])
    return tuple({**values, "variant": variant_label(precision, compiled, batch)}.values())


def api_cost(table: pd.DataFrame, runs: pd.DataFrame | None = None) -> pd.DataFrame:
    """From the appendix's long table: per dataset, network, device and variant, each framework's mean of
    every API_COST_COLUMNS column it measured and, for a framework that runs on another (the registry's
    ``runs_on``: Keras on its backend, ONNX Runtime on PyTorch's export), that mean over the other's (Keras's fit
    over its backend's own loop: :func:`peer_setting`). With ``runs`` (runs.csv, which has each run's batch): the
    milliseconds per training and inference step (:data:`STEP_MS_COLUMNS`), as seed 001's charts give them."""
    means = table.set_index([*SETTING_KEYS, "framework", "metric", "task"])["mean"]
    if runs is not None:  # 1000 x batch / images per second: each cell's step from its mean speed
        batches = runs.groupby([*SETTING_KEYS, "framework", "task"])["batch_size_global"].first()
        for task, metric in STEP_MS_COLUMNS.items():
            speeds = means[(means.index.get_level_values("metric") == metric)
                           & (means.index.get_level_values("task") == task)]
            batch = [batches.get((*key[:-2], key[-1]), float("nan")) for key in speeds.index]
            steps = (1000 * pd.Series(batch, index=speeds.index) / speeds).rename(index={metric: "step_ms"})
            means = pd.concat([means, steps])
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
                mean = means.get((*setting, framework, metric, task), float("nan"))
                row[f"{metric} {task}"] = mean
                row[f"{metric} {task} ratio"] = mean / means.get((*peer_setting(setting), peer, metric, task),
                                                                 float("nan"))
            rows.append(row)
    keys = [*SETTING_KEYS, "framework", "runs_on"]
    out = pd.DataFrame(rows) if rows else pd.DataFrame(columns=keys)
    unmeasured = [column for column in out.columns if column not in keys and out[column].isna().all()]
    return out.drop(columns=unmeasured)


def api_cost_markdown(cost: pd.DataFrame) -> str:
    """The API-cost table for a reader: one row per framework, each value with its ratio (×) where it has one."""
    columns = [f"{metric} {task}" for metric, task in [*(("step_ms", task) for task in STEP_MS_COLUMNS),
                                                       *API_COST_COLUMNS] if f"{metric} {task}" in cost]
    shown = cost[[*SETTING_KEYS, "framework", "runs_on"]].fillna({"runs_on": "—"})
    for column in columns:
        metric, task = column.split()
        label = f"ms per {task} step" if metric == "step_ms" else f"{column} ({METRICS[metric].unit})"
        ratios = cost.get(f"{column} ratio", pd.Series(float("nan"), index=cost.index))
        shown[label] = [
            "—" if pd.isna(value) else f"{value:,.{decimals(value)}f}" + ("" if pd.isna(ratio) else f" (×{ratio:.2f})")
            for value, ratio in zip(cost[column], ratios)]
    return ("# What an API costs, and where a run's time goes\n\n" + markdown_table(shown) + "\n")


def write_api_cost(appendix_csv: Path, runs_csv: Path, csv_out: Path, md_out: Path) -> None:
    cost = api_cost(read_appendix(appendix_csv), read_runs(runs_csv))
    cost.to_csv(csv_out, index=False)
    md_out.write_text(api_cost_markdown(cost))
