"""One hardware target over another (tables.targets): seed 003's figure of the P100's speed-up over the K80."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..metrics import METRICS
from ..tables.targets import FASTER_BY
from . import FRAMEWORK_COLOURS, framework_order, save, with_notes


def targets_figure(speedups: pd.DataFrame, outputs: list[Path]) -> None:
    """A panel per pair of targets, metric and device, in :data:`FASTER_BY`'s order of metrics: a group per dataset
    and network, a bar per framework in its colour, labelled with its speed-up, its 95 % interval as error bars
    (none where a side has one run), faint where the verdict is not faster or slower; 1 (as fast) is the black line.
    A machine of several in a target is named on its panel."""
    shown = speedups.assign(panel=speedups["target"] + " over " + speedups["baseline"] + ", " + speedups["device"]
                            + ": " + speedups["metric"].str.replace("_", " ") + " (by " + speedups["metric"].map(
                                lambda metric: "speed" if METRICS[metric].best == "max" else "time") + ")")
    machines = ["target_machine", "baseline_machine"]
    several = shown.groupby(["target", "baseline", "metric", "device"])[machines].nunique()
    if len(several) and several.to_numpy().max() > 1:
        shown["panel"] += "\n" + shown["target_machine"] + " over " + shown["baseline_machine"]
    shown = shown.assign(rank=shown["metric"].map(FASTER_BY.index))
    panels = list(shown.sort_values(["target", "baseline", "rank", "device"], kind="stable")["panel"].drop_duplicates())
    fig, axes = with_notes(max(5.5, 4.5 * min(len(panels), 3)), 4 * -(-max(len(panels), 1) // 3), [] if panels else [
        "No cell ran on both targets of a pair on the same device (compare_targets)."],
                           min(max(len(panels), 1), 3), -(-max(len(panels), 1) // 3))
    for ax, panel in zip(axes, panels):
        bars = shown[shown["panel"] == panel]
        groups = sorted((bars["dataset"] + "\n" + bars["network"]).unique())
        frameworks = framework_order(bars["framework"])
        width = 0.8 / len(frameworks)
        for row in bars.itertuples():
            x = groups.index(f"{row.dataset}\n{row.network}") - 0.4 + width * (frameworks.index(row.framework) + 0.5)
            bounds = None if pd.isna(row.speedup_low) else [[row.speedup - row.speedup_low],
                                                            [row.speedup_high - row.speedup]]
            ax.bar(x, row.speedup, width, color=FRAMEWORK_COLOURS[row.framework], label=row.framework,
                   yerr=bounds, capsize=2, alpha=1.0 if row.verdict in ("faster", "slower") else 0.4,
                   gid=f"speedup {row.framework} {row.dataset} {row.network} {row.metric} {row.target} {row.baseline}")
            ax.annotate(f"×{row.speedup:.3g}", (x, row.speedup if bounds is None else row.speedup_high),
                        xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6)
        ax.axhline(1, color="black", linewidth=0.8)
        handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
        ax.legend([handles[f] for f in frameworks], frameworks, fontsize=7, loc="lower right")
        ax.set(title=panel, xticks=range(len(groups)), ylabel="speed-up (times)")
        ax.set_xticklabels(groups, fontsize=7)
        ax.title.set_fontsize(9)
    for ax in axes[len(panels):]:
        ax.axis("off")
    fig.suptitle("One hardware target over another: how many times faster, cell by cell", fontsize=10)
    save(fig, outputs)
