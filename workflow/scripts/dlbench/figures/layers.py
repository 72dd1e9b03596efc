"""Where a profiled training step's time goes."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..tables import settings
from ..tables.layers import layer_means
from ..tables.runs import runs_table
from . import save


def layer_times(records: list[dict], outputs: list[Path]) -> None:
    """Where a profiled training step's time goes: a panel per framework and setting, a bar per layer of the
    description (in its order, top down), its forward, backward and (where the profiler attributes it) weight
    update milliseconds stacked (mean over the ok runs), and below them the optimizer's update where it is timed
    whole and the step's time that neither accounts for. Cells without a profile say why."""
    records = [record for record in records if record["run"]["task"] == "profile"]
    run = records[0]["run"]
    means = layer_means(records)
    table = runs_table(records)
    cells = table.assign(setting=table["framework"] + " " + settings(table))
    panels = sorted(cells["setting"].unique())
    height = max(3.0, 0.16 * (means["layer"].nunique() + 2) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6.5, 4.2 * len(panels)), height), squeeze=False,
                             layout="constrained")
    colours = sns.color_palette(n_colors=3)
    for ax, panel in zip(axes[0], panels):
        first = cells[cells["setting"] == panel].iloc[0]
        keys = ["framework", "hardware", "device", "machine", "variant"]
        layers = means[(means[keys] == first[keys]).all(axis=1)]
        if not len(layers):
            ax.text(0.5, 0.5, f"{first['status']}: {first['reason']}", ha="center", va="center", wrap=True,
                    fontsize=8, color="firebrick", transform=ax.transAxes)
            ax.set(title=panel, xticks=[], yticks=[])
            continue
        whole_update = layers["step_update_ms"].iloc[0]
        per_layer = layers["update_ms"].notna().all()
        names = [*layers["layer"], *["update"] * (pd.notna(whole_update) and not per_layer), "unaccounted"]
        y = list(range(len(names)))
        step = layers["iteration_ms"].iloc[0]
        unaccounted = step - (layers["forward_ms"] + layers["backward_ms"]).sum() - (
            0 if pd.isna(whole_update) else whole_update)
        ax.barh(y[:len(layers)], layers["forward_ms"], color=colours[0], label="forward", gid=f"forward {panel}")
        ax.barh(y[:len(layers)], layers["backward_ms"], left=layers["forward_ms"], color=colours[1],
                label="backward", gid=f"backward {panel}")
        if per_layer:
            ax.barh(y[:len(layers)], layers["update_ms"], left=layers["forward_ms"] + layers["backward_ms"],
                    color=colours[2], label="update", gid=f"update {panel}")
        elif pd.notna(whole_update):
            ax.barh(y[-2], whole_update, color=colours[2], label="update (whole)", gid=f"update {panel}")
        ax.barh(y[-1], max(unaccounted, 0), color="gray", label="no layer, no update", gid=f"unaccounted {panel}")
        ax.set_yticks(list(y), names, fontsize=6)
        ax.invert_yaxis()
        ax.set(title=f"{panel}\nstep {step:,.1f} ms, {unaccounted / step:.0%} in no layer, no update",
               xlabel="ms per profiled step")
        ax.title.set_fontsize(8)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{run['dataset']} / {run['network']}: time per layer in a profiled training step", fontsize=10)
    save(fig, outputs)
