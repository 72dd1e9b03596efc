"""One bar chart per (dataset, network, metric), like the thesis's Figures 5.2-5.4."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .aggregate import METRICS, appendix, runs_table, setting_order, settings


def figure(records: list[dict], metric: str, outputs: list[Path]) -> None:
    """Grouped bars (framework × device, and variant where there are several: aggregate.settings): the
    mean over the cell's ok runs, error bars = sd. A cell with no value is marked in its slot with
    its status, and the reasons are listed. A cell whose runs were input-bound or contended is
    hatched and says so above its bar. Each bar's SVG id names its cell (``bar <framework> <setting>``)."""
    runs = runs_table(records)
    dataset, network = runs["dataset"].iloc[0], runs["network"].iloc[0]
    unit = METRICS[metric].unit
    cells = appendix(runs).query("metric == @metric")
    cells = cells.assign(setting=settings(cells)).set_index(["framework", "setting"])
    frameworks = sorted(runs["framework"].unique())
    slots = setting_order(cells.reset_index())
    width = 0.8 / len(slots)
    colours = dict(zip(slots, sns.color_palette(n_colors=len(slots))))
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(frameworks) * max(1, len(slots)) / 2 + 3), 4))
    for framework, slot in ((f, d) for f in frameworks for d in slots):
        if (framework, slot) not in cells.index:
            continue
        cell = cells.loc[(framework, slot)]
        x = frameworks.index(framework) - 0.4 + width * (slots.index(slot) + 0.5)
        if cell["n"]:
            bar = ax.bar(x, cell["mean"], width, yerr=None if pd.isna(cell["sd"]) else cell["sd"], capsize=3,
                         color=colours[slot], label=slot, hatch="//" if cell["flags"] else None)
            bar.patches[0].set_gid(f"bar {framework} {slot}")
            if cell["flags"]:  # the speed says as much about the machine as about the framework
                ax.annotate(cell["flags"].replace(", ", "\n"), (x, cell["mean"]), xytext=(0, 3),
                            textcoords="offset points", rotation=90, ha="center", va="bottom", fontsize=7,
                            color="darkorange", gid=f"flags {framework} {slot}")
        else:  # no bar, never a zero: the status where the bar would stand
            ax.text(x, 0, cell["cell"].split(":")[0], rotation=90, ha="center", va="bottom", fontsize=8,
                    color="firebrick", gid=f"missing {framework} {slot}")
    handles = dict(zip(*reversed(ax.get_legend_handles_labels())))  # slot: one of its bars
    if handles:
        shown = [slot for slot in slots if slot in handles]
        ax.legend([handles[slot] for slot in shown], shown, fontsize=8,
                  title="device" if set(runs["variant"]) == {"fp32"} else "device, variant")
    missing = cells[cells["n"] == 0]
    notes = sorted({f"{framework} / {slot}: {text}" for (framework, slot), text in missing["cell"].items()})
    if notes:
        ax.text(0.01, 0.98, "\n".join(notes[:8]), transform=ax.transAxes, va="top", fontsize=7, color="dimgray",
                wrap=True)
    ax.set(title=f"{dataset} / {network}: {metric.replace('_', ' ')}", xlabel="framework", ylabel=unit,
           xticks=range(len(frameworks)), xlim=(-0.5, len(frameworks) - 0.5))
    ax.set_xticklabels(frameworks)
    if not len(cells[cells["n"] > 0]):
        ax.set(yticks=[])
    if len(frameworks) > 4:  # long names such as keras-tensorflow would run into each other
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right", rotation_mode="anchor")
    fig.tight_layout()
    for path in outputs:
        fig.savefig(path)
    plt.close(fig)
