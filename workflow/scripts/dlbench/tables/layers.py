"""The layers table: per profile cell, the appendix's profiler cells and its most expensive layers."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..record import load_records
from ..spec import run_variant
from . import CELL_KEYS, decimals, markdown_table, read_appendix
from .runs import hardware, machine

TOP_LAYERS = 5  # the layers table's most expensive layers per cell
PROFILE_CELL = [key for key in CELL_KEYS if key != "task"]


def layer_means(records: list[dict]) -> pd.DataFrame:
    """Per profile cell (dataset, network, framework, placement, variant) and layer, in walk order: the mean over
    its ok runs of each layer's forward and backward milliseconds, and of the profiled step's."""
    rows = []
    for record in records:
        run, profile = record["run"], record.get("profile") or {}
        if run["task"] != "profile" or record["status"] != "ok" or not profile.get("layers"):
            continue
        cell = {"dataset": run["dataset"], "network": run["network"], "framework": run["framework"],
                "hardware": hardware(run), "device": run["device"], "machine": machine(record) or "unknown",
                "variant": run_variant(run)}
        rows += [{**cell, "order": order, "layer": layer["name"], "forward_ms": layer["forward_ms"],
                  "backward_ms": layer["backward_ms"], "iteration_ms": profile["iteration_ms"],
                  "repetition": run["repetition"]} for order, layer in enumerate(profile["layers"])]
    columns = [*PROFILE_CELL, "order", "layer"]
    if not rows:
        return pd.DataFrame(columns=[*columns, "forward_ms", "backward_ms", "iteration_ms", "runs"])
    table = pd.DataFrame(rows).groupby(columns, sort=True).agg(
        forward_ms=("forward_ms", "mean"), backward_ms=("backward_ms", "mean"), iteration_ms=("iteration_ms", "mean"),
        runs=("repetition", "nunique")).reset_index()
    return table.sort_values(PROFILE_CELL).reset_index(drop=True)


def layers_table(records: list[dict], appendix: pd.DataFrame) -> pd.DataFrame:
    """One row per profile cell: the appendix's cells of its profiler overheads and unaccounted share, and its
    most expensive layers (forward + backward, mean over its ok runs), so that the same layer can be read
    across frameworks."""
    keys = PROFILE_CELL
    profiled = appendix[appendix["task"] == "profile"]
    shares = ("profiling_overhead", "profiling_whole_overhead", "unaccounted_share")
    columns = [*keys, *shares, *[f"layer {k}" for k in range(1, TOP_LAYERS + 1)]]
    if not len(profiled):
        return pd.DataFrame(columns=columns)
    cells = profiled.pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    means = layer_means(records).assign(total_ms=lambda t: t["forward_ms"] + t["backward_ms"])
    rows = []
    for key in cells.index:
        row = dict(zip(keys, key), **{metric: cells.loc[key].get(metric, "") for metric in shares})
        layers = means[(means[keys] == pd.Series(dict(zip(keys, key)))).all(axis=1)].nlargest(TOP_LAYERS, "total_ms")
        for rank, layer in enumerate(layers.itertuples(), 1):
            row[f"layer {rank}"] = (f"{layer.layer} {layer.total_ms:,.{decimals(layer.total_ms)}f} ms "
                                    f"({layer.forward_ms:,.{decimals(layer.forward_ms)}f} + "
                                    f"{layer.backward_ms:,.{decimals(layer.backward_ms)}f})")
        rows.append(row)
    return pd.DataFrame(rows, columns=columns).fillna("")


def write_layers(record_paths: list[Path], appendix_csv: Path, csv_out: Path, md_out: Path) -> None:
    table = layers_table(load_records(record_paths), read_appendix(appendix_csv))
    table.to_csv(csv_out, index=False)
    text = markdown_table(table) if len(table) else "No profile runs in this config (tasks: [profile])."
    md_out.write_text("# Where a training step's time goes, layer by layer\n\n" + text + "\n")
