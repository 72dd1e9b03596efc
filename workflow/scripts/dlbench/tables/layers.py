"""The layers table: per profile cell, the appendix's profiler cells and its most expensive layers."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .. import files
from ..record.io import load_records
from ..record.provenance import machine
from ..spec import run_variant
from . import CELL_KEYS, decimals, markdown_table, read_appendix
from .runs import hardware

TOP_LAYERS = 5  # the layers table's most expensive layers per cell
UPDATE_COLUMN = "update ms/step"  # the optimizer's update, seed 004's momentum update
PROFILE_CELL = [key for key in CELL_KEYS if key != "task"]


def layer_means(records: list[dict]) -> pd.DataFrame:
    """Per profile cell (dataset, network, framework, placement, variant) and layer, in walk order: the mean over
    its ok runs of each layer's forward and backward milliseconds, and of its weights' update where the profiler
    attributes it (else NaN); of the profiled step's, and of the optimizer's whole update per step (NaN where the
    profiler does not time it)."""
    rows = []
    for record in records:
        run, profile = record["run"], record.get("profile") or {}
        if run["task"] != "profile" or record["status"] != "ok" or not profile.get("layers"):
            continue
        cell = {"dataset": run["dataset"], "network": run["network"], "framework": run["framework"],
                "hardware": hardware(run), "device": run["device"], "machine": machine(record) or "unknown",
                "variant": run_variant(run)}
        rows += [{**cell, "order": order, "layer": layer["name"], "forward_ms": layer["forward_ms"],
                  "backward_ms": layer["backward_ms"], "update_ms": layer.get("update_ms"),
                  "iteration_ms": profile["iteration_ms"], "step_update_ms": profile.get("update_ms"),
                  "repetition": run["repetition"]} for order, layer in enumerate(profile["layers"])]
    columns = [*PROFILE_CELL, "order", "layer"]
    measured = ["forward_ms", "backward_ms", "update_ms", "iteration_ms", "step_update_ms"]
    if not rows:
        return pd.DataFrame(columns=[*columns, *measured, "runs"])
    table = pd.DataFrame(rows).astype({name: float for name in measured}).groupby(columns, sort=True).agg(
        **{name: (name, "mean") for name in measured}, runs=("repetition", "nunique")).reset_index()
    return table.sort_values(PROFILE_CELL).reset_index(drop=True)


def layers_table(records: list[dict], appendix: pd.DataFrame) -> pd.DataFrame:
    """One row per profile cell: the appendix's cells of its profiler overheads and unaccounted share, the
    optimizer's update per step (mean over its ok runs; "not timed" where the profiler does not time it), and its
    most expensive layers (forward + backward + their weights' update where attributed, mean over its ok runs), so
    that the same layer can be read across frameworks."""
    keys = PROFILE_CELL
    profiled = appendix[appendix["task"] == "profile"]
    shares = ("profiling_overhead", "profiling_whole_overhead", "profiling_whole_overhead_seconds",
              "unaccounted_share")
    columns = [*keys, *shares, UPDATE_COLUMN, *[f"layer {k}" for k in range(1, TOP_LAYERS + 1)]]
    if not len(profiled):
        return pd.DataFrame(columns=columns)
    cells = profiled.pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    means = layer_means(records).assign(
        total_ms=lambda t: t["forward_ms"] + t["backward_ms"] + t["update_ms"].fillna(0))
    rows = []
    for key in cells.index:
        row = dict(zip(keys, key), **{metric: cells.loc[key].get(metric, "") for metric in shares})
        cell = means[(means[keys] == pd.Series(dict(zip(keys, key)))).all(axis=1)]
        if len(cell):
            update = cell["step_update_ms"].iloc[0]
            row[UPDATE_COLUMN] = "not timed" if pd.isna(update) else f"{update:,.{decimals(update)}f}"
        layers = cell.nlargest(TOP_LAYERS, "total_ms")
        for rank, layer in enumerate(layers.itertuples(), 1):
            parts = [layer.forward_ms, layer.backward_ms, *([layer.update_ms] * pd.notna(layer.update_ms))]
            row[f"layer {rank}"] = (f"{layer.layer} {layer.total_ms:,.{decimals(layer.total_ms)}f} ms ("
                                    + " + ".join(f"{part:,.{decimals(part)}f}" for part in parts) + ")")
        rows.append(row)
    return pd.DataFrame(rows, columns=columns).fillna("")


def write_layers(record_paths: list[Path], appendix_csv: Path, csv_out: Path, md_out: Path) -> None:
    table = layers_table(load_records(record_paths), read_appendix(appendix_csv))
    files.write_text(csv_out, table.to_csv(index=False))
    text = markdown_table(table) if len(table) else "No profile runs in this config (tasks: [profile])."
    if len(table):
        text += ("\n\nA layer's milliseconds are its forward + backward, + the update of its weights where the "
                 "profiler attributes the optimizer's ops to their layers (TensorFlow, Keras on TensorFlow and JAX).")
    files.write_text(md_out, "# Where a training step's time goes, layer by layer\n\n" + text + "\n")
