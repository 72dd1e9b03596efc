"""Which framework, at a glance: a dataset's heatmap of a training metric."""
from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .. import stats
from ..metrics import METRICS
from ..spec import gpu_count
from ..tables import decimals, setting_order, settings, summary
from . import framework_order, save


def heatmap(table: pd.DataFrame, dataset: str, metric: str, outputs: list[Path], hardware: Sequence[str] = (),
            threshold: float = stats.THRESHOLD) -> None:
    """Which framework, at a glance: per placement (hardware target and device, targets in the order ``hardware`` names
    them; and variant), a framework × network grid of a training metric against the top framework's estimate on that
    network (1.00 = the top: the fastest, or the one that took the least energy per image; ``Metric.best``), the value
    beneath. The top is named "best" only where the repetitions resolve it above every other framework
    (dlbench.stats.ranks at ``threshold``); a framework they do not resolve below the top reads "≈". A cell without a
    value is grey with its status; a framework the config did not run on a network is blank."""
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
        estimates = cells["estimate"].unstack("network").reindex(index=frameworks, columns=networks)
        relative = estimates / estimates.max() if definition.best == "max" else estimates.min() / estimates
        sns.heatmap(relative, ax=ax, vmin=0, vmax=1, cmap="viridis", cbar=panel == panels[-1], annot=False,
                    linewidths=0.5, linecolor="white", cbar_kws={"label": (
                        "this one's ÷ the top's" if definition.best == "max" else "the top's ÷ this one's")})
        below = {network: _resolved_below_top(cells.xs(network, level="network"), definition.best, threshold)
                 for network in networks if network in cells.index.get_level_values("network")}
        for (row, framework), (column, network) in ((r, c) for r in enumerate(frameworks) for c in enumerate(networks)):
            if (framework, network) not in cells.index:
                continue
            cell = cells.loc[(framework, network)]
            if cell["n"]:
                share, value = relative.at[framework, network], cell["estimate"]
                text = f"{_standing(framework, share, below[network])}\n{value:,.{decimals(value)}f}"
                colour = "black" if share > 0.6 else "white"
            else:
                ax.add_patch(plt.Rectangle((column, row), 1, 1, color="lightgray"))
                text, colour = cell["cell"].split(":")[0], "firebrick"
            ax.text(column + 0.5, row + 0.5, text, ha="center", va="center", fontsize=7, color=colour,
                    gid=f"heat {framework} {network} {panel}")
        ax.set(title=panel, xlabel="network", ylabel="framework" if panel == panels[0] else "")
        ax.tick_params(axis="y", rotation=0)
    fig.suptitle(textwrap.fill(f"{dataset}: {words} against the top framework per network ({definition.unit} below; "
                               "≈: not resolved below the top; best: resolved above every other)",
                               width=int(fig.get_figwidth() * 12)), fontsize=10)
    save(fig, outputs)



def _resolved_below_top(cells: pd.DataFrame, best: str, threshold: float) -> dict[str, bool]:
    """A network's measured frameworks but the top one (the highest estimate where ``best`` is max, else the
    lowest): whether the repetitions resolve each below the top (dlbench.stats.ratio at ``threshold``)."""
    measured = cells[cells["n"] > 0]
    if not len(measured):
        return {}
    top = measured["estimate"].idxmax() if best == "max" else measured["estimate"].idxmin()
    worse = stats.LOWER if best == "max" else stats.HIGHER
    return {framework: stats.ratio(summary(measured.loc[top]), summary(cell), threshold).verdict == worse
            for framework, cell in measured.iterrows() if framework != top}


def _standing(framework: str, share: float, below: dict[str, bool]) -> str:
    """A heatmap cell's first line: its share of the top's value; "best" for the top where every other framework
    is resolved below it (``below``: :func:`_resolved_below_top`); "≈" before the share of one that is not."""
    if framework not in below:  # the top
        return "best" if below and all(below.values()) else f"{share:.2f}"
    return f"{share:.2f}" if below[framework] else f"≈{share:.2f}"
