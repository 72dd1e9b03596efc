"""One bar chart per (dataset, network, metric), like the thesis's Figures 5.2-5.4."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .aggregate import METRICS, appendix, runs_table


def figure(records: list[dict], metric: str, outputs: list[Path]) -> None:
    """Grouped bars (framework × device): the mean over the cell's ok runs, error bars = sd. A cell
    with no value is marked in its slot with its status, and the reasons are listed. Each bar's SVG
    id names its cell (``bar <framework> <device>``)."""
    runs = runs_table(records)
    dataset, network = runs["dataset"].iloc[0], runs["network"].iloc[0]
    unit = METRICS[metric].unit
    cells = appendix(runs).query("metric == @metric").set_index(["framework", "device"])
    frameworks = sorted(runs["framework"].unique())
    devices = sorted(runs["device"].unique())
    width = 0.8 / len(devices)
    colours = dict(zip(devices, sns.color_palette(n_colors=len(devices))))
    fig, ax = plt.subplots(figsize=(max(5, 1.3 * len(frameworks) * max(1, len(devices)) / 2 + 3), 4))
    for framework, device in ((f, d) for f in frameworks for d in devices):
        if (framework, device) not in cells.index:
            continue
        cell = cells.loc[(framework, device)]
        x = frameworks.index(framework) - 0.4 + width * (devices.index(device) + 0.5)
        if cell["n"]:
            bar = ax.bar(x, cell["mean"], width, yerr=None if pd.isna(cell["sd"]) else cell["sd"], capsize=3,
                         color=colours[device], label=device)
            bar.patches[0].set_gid(f"bar {framework} {device}")
        else:  # no bar, never a zero: the status where the bar would stand
            ax.text(x, 0, cell["cell"].split(":")[0], rotation=90, ha="center", va="bottom", fontsize=8,
                    color="firebrick", gid=f"missing {framework} {device}")
    handles = dict(zip(*reversed(ax.get_legend_handles_labels())))  # device: one of its bars
    if handles:
        shown = [device for device in devices if device in handles]
        ax.legend([handles[device] for device in shown], shown, title="device", fontsize=8)
    missing = cells[cells["n"] == 0]
    notes = sorted({f"{framework} / {device}: {text}" for (framework, device), text in missing["cell"].items()})
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
