"""Which framework, at a glance: a dataset's heatmap of a training metric."""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from ..metrics import METRICS
from ..spec import gpu_count
from ..tables import decimals, setting_order, settings
from . import framework_order, save


def heatmap(table: pd.DataFrame, dataset: str, metric: str, outputs: list[Path], hardware: Sequence[str] = ()) -> None:
    """Which framework, at a glance: per placement (hardware target and device, targets in the order ``hardware`` names
    them; and variant), a framework × network grid of a training metric against the best framework's on that network
    (1.00 = the best: the fastest, or the one that took the least energy per image; ``Metric.best``), the value beneath.
    A cell without a value is grey with its status; a framework the config did not run on a network is blank."""
    definition, words = METRICS[metric], metric.replace("_", " ")
    values = table[(table["metric"] == metric) & (table["task"] == "train") & (table["dataset"] == dataset)]
    if definition.needs == "gpu":  # no panel of CPU runs that could not have measured it
        values = values[values["device"].map(gpu_count) > 0]
    values = values.assign(setting=settings(values))
    panels = setting_order(values, hardware)
    networks = sorted(values["network"].unique())
    frameworks = framework_order(values["framework"])
    size = (1.3 * len(networks) * len(panels) + 2.5, 0.45 * len(frameworks) + 1.8)
    fig, axes = plt.subplots(1, len(panels), figsize=size, squeeze=False, layout="constrained")
    for ax, panel in zip(axes[0], panels):
        cells = values[values["setting"] == panel].set_index(["framework", "network"])
        means = cells["mean"].unstack("network").reindex(index=frameworks, columns=networks)
        relative = means / means.max() if definition.best == "max" else means.min() / means
        sns.heatmap(relative, ax=ax, vmin=0, vmax=1, cmap="viridis", cbar=panel == panels[-1], annot=False,
                    linewidths=0.5, linecolor="white", cbar_kws={"label": (
                        "this one's ÷ the best's" if definition.best == "max" else "the best's ÷ this one's")})
        for (row, framework), (column, network) in ((r, c) for r in enumerate(frameworks) for c in enumerate(networks)):
            if (framework, network) not in cells.index:
                continue
            cell = cells.loc[(framework, network)]
            if cell["n"]:
                text, colour = f"{relative.at[framework, network]:.2f}\n{cell['mean']:,.{decimals(cell['mean'])}f}", (
                    "black" if relative.at[framework, network] > 0.6 else "white")
            else:
                ax.add_patch(plt.Rectangle((column, row), 1, 1, color="lightgray"))
                text, colour = cell["cell"].split(":")[0], "firebrick"
            ax.text(column + 0.5, row + 0.5, text, ha="center", va="center", fontsize=7, color=colour,
                    gid=f"heat {framework} {network} {panel}")
        ax.set(title=panel, xlabel="network", ylabel="framework" if panel == panels[0] else "")
        ax.tick_params(axis="y", rotation=0)
    fig.suptitle(textwrap.fill(f"{dataset}: {words} against the best framework per network ({definition.unit} below)",
                               width=int(fig.get_figwidth() * 12)), fontsize=10)
    save(fig, outputs)
