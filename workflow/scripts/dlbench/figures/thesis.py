"""Ours against the thesis's."""
from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ..tables.thesis import HARDWARE_WORDS
from . import FRAMEWORK_COLOURS, framework_order, plain_log, save, with_notes


def thesis_figure(compared: pd.DataFrame, outputs: list[Path]) -> None:
    """Ours against the thesis's, log-log, a panel per metric and thesis hardware: a point per cell both
    measured, in its framework's colour and its case's marker (network and dataset); on the diagonal we measured
    what the thesis did. Cells only one side measured are listed below."""
    both = compared.dropna(subset=["ours_mean", "thesis"])
    panels = sorted(both[["metric", "thesis_hardware"]].drop_duplicates().itertuples(index=False), key=tuple)
    one_side = compared[compared[["ours_mean", "thesis"]].isna().any(axis=1)]
    notes = [f"{row.dataset} / {row.network} / {row.framework} / {row.device}: {row.metric} "
             f"{'not measured here (' + row.ours + ')' if pd.isna(row.ours_mean) else 'not in the thesis'}"
             f" [{HARDWARE_WORDS[row.thesis_hardware]}]" for row in one_side.itertuples()]
    if not panels:
        notes.insert(0, "No cell was measured both here and in the thesis.")
    shown = notes[:25] + ([f"... and {len(notes) - 25} more (results/tables/thesis.csv)"] if len(notes) > 25 else [])
    fig, axes = with_notes(max(5.5, 4.2 * max(len(panels), 1)), 4.2, shown, max(len(panels), 1))
    cases = sorted({f"{row.network} / {row.dataset}" for row in both.itertuples()})
    markers = dict(zip(cases, "osD^vP*Xph<>H8d"))
    for ax, (metric, hardware) in zip(axes, panels):
        points = both[(both["metric"] == metric) & (both["thesis_hardware"] == hardware)]
        for row in points.itertuples():
            ax.scatter(row.thesis, row.ours_mean, color=FRAMEWORK_COLOURS[row.framework],
                       marker=markers[f"{row.network} / {row.dataset}"], s=36, edgecolor="black", linewidth=0.4,
                       gid=f"point {row.framework} {row.dataset} {row.network}")
        low, high = min(points["thesis"].min(), points["ours_mean"].min()), max(points["thesis"].max(),
                                                                                points["ours_mean"].max())
        ax.plot([low / 2, high * 2], [low / 2, high * 2], linestyle="--", color="gray", linewidth=1)
        ax.set(xscale="log", yscale="log", title=f"{metric.replace('_', ' ')}: ours vs {HARDWARE_WORDS[hardware]}",
               xlabel=f"thesis ({points['unit'].iloc[0]})", ylabel=f"ours ({points['unit'].iloc[0]})")
        ax.title.set_fontsize(8)
        for axis in (ax.xaxis, ax.yaxis):
            plain_log(axis, high / low)
    handles = [plt.Line2D([], [], color=FRAMEWORK_COLOURS[f], marker="o", linestyle="") for f in
               framework_order(both["framework"])] + [
        plt.Line2D([], [], color="gray", marker=markers[case], linestyle="") for case in cases]
    axes[-1].legend(handles, [*framework_order(both["framework"]), *cases], fontsize=7, loc="upper left",
                    bbox_to_anchor=(1.02, 1), borderaxespad=0)
    if not panels:
        axes[0].axis("off")
    save(fig, outputs)
