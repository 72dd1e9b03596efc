"""Speed-up on several devices over one."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..tables import placements
from ..tables.appendix import scaling
from . import FRAMEWORK_COLOURS, framework_order, save, with_notes


def scaling_figure(table: pd.DataFrame, dataset: str, outputs: list[Path]) -> None:
    """Speed-up on several devices over one (tables.appendix.scaling), a group per network, a bar per framework in
    its colour, a panel per placement (:func:`tables.placements`) and variant, the ideal (as many times as
    devices) dashed."""
    scaled = scaling(table[table["dataset"] == dataset])
    scaled = scaled.assign(panel=placements(scaled)
                           + (" " + scaled["variant"]).where(scaled["variant"] != "fp32", ""))
    panels = sorted(scaled["panel"].unique())
    fig, axes = with_notes(max(5.5, 4.5 * len(panels)), 4, [] if panels else [
        "No framework ran this dataset's training both on one device and on several."], max(len(panels), 1))
    for ax, panel in zip(axes, panels):
        bars = scaled[scaled["panel"] == panel]
        networks, frameworks = sorted(bars["network"].unique()), framework_order(bars["framework"])
        width = 0.8 / len(frameworks)
        for row in bars.itertuples():
            x = networks.index(row.network) - 0.4 + width * (frameworks.index(row.framework) + 0.5)
            ax.bar(x, row.speedup, width, color=FRAMEWORK_COLOURS[row.framework], label=row.framework,
                   gid=f"speedup {row.framework} {row.network} {panel}")
            ax.annotate(f"{row.efficiency:.0%}", (x, row.speedup), xytext=(0, 2), textcoords="offset points",
                        ha="center", fontsize=6)
        ax.axhline(bars["devices"].iloc[0], linestyle="--", color="gray", linewidth=1)
        ax.axhline(1, color="black", linewidth=0.8)
        handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
        ax.legend([handles[f] for f in frameworks], frameworks, fontsize=7, loc="lower right")
        ax.set(title=f"{panel} over {bars['baseline'].iloc[0]} (dashed: ideal)", xticks=range(len(networks)),
               xlabel="network", ylabel="speed-up (labels: efficiency)")
        ax.set_xticklabels(networks)
    if not panels:
        axes[0].axis("off")
    fig.suptitle(f"{dataset}: training speed on several devices over one", fontsize=10)
    save(fig, outputs)
