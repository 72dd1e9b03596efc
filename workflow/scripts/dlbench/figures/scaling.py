"""Speed-up on several devices over one, and on a GPU over a CPU."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import stats
from ..tables import target_rank
from ..tables.appendix import gpu_over_cpu, scaling
from . import FRAMEWORK_COLOURS, framework_order, plain_log, save, with_notes


def scaling_figure(table: pd.DataFrame, dataset: str, outputs: list[Path], hardware: Sequence[str] = (),
                   threshold: float = stats.THRESHOLD) -> None:
    """Training speed-ups (tables.appendix.scaling and gpu_over_cpu), a panel per placement (and variant) and the
    placement it is set against, in the order of the targets (``hardware``, the config's): a group per network, a
    bar per framework in its colour. On several devices each bar says its efficiency and the ideal (as many
    times as devices) is dashed; on a GPU over a CPU each says how many times, and the axis is logarithmic. Error
    bars are the speed-up's 95 % interval (at ``threshold``, a bar the repetitions do not resolve is faint). A bar
    whose cell is flagged (contended; "nodes" that were one machine, whose speed-up is no measure of nodes) is
    hatched, and the note under the figure says why."""
    table = table[table["dataset"] == dataset]
    speedups = pd.concat([scaling(table, threshold), gpu_over_cpu(table, hardware, threshold)], ignore_index=True)
    speedups["flags"] = speedups["flags"].fillna("")
    speedups = speedups.assign(panel=speedups["placement"] + (" " + speedups["variant"]).where(
        speedups["variant"] != "fp32", "") + " over " + speedups["baseline"])
    order = speedups.assign(rank=speedups["hardware"].map(lambda target: target_rank(target, hardware)))
    panels = list(order.sort_values(["rank", "devices", "panel"], kind="stable")["panel"].drop_duplicates())
    flagged = speedups[speedups["flags"] != ""]
    notes = [f"hatched: {row.framework} {row.network}, {row.panel}: {row.flags}" for row in flagged.itertuples()]
    fig, axes = with_notes(max(5.5, 4.5 * len(panels)), 4, notes if panels else [
        "No framework ran this dataset's training both on one device and on several, or on a GPU and a CPU."],
                           max(len(panels), 1))
    for ax, panel in zip(axes, panels):
        bars = speedups[speedups["panel"] == panel]
        networks, frameworks = sorted(bars["network"].unique()), framework_order(bars["framework"])
        devices = bars["devices"].iloc[0]
        width = 0.8 / len(frameworks)
        for row in bars.itertuples():
            x = networks.index(row.network) - 0.4 + width * (frameworks.index(row.framework) + 0.5)
            bounds = None if pd.isna(row.speedup_low) else [[row.speedup - row.speedup_low],
                                                            [row.speedup_high - row.speedup]]
            ax.bar(x, row.speedup, width, color=FRAMEWORK_COLOURS[row.framework], label=row.framework, yerr=bounds,
                   capsize=2, alpha=1.0 if row.verdict in ("faster", "slower") else 0.4,
                   hatch="//" if row.flags else None, gid=f"speedup {row.framework} {row.network} {panel}")
            ax.annotate(f"{row.efficiency:.0%}" if devices > 1 else f"×{row.speedup:.3g}",
                        (x, row.speedup if bounds is None else row.speedup_high),
                        xytext=(0, 2), textcoords="offset points", ha="center", fontsize=6)
        if devices > 1:
            ax.axhline(devices, linestyle="--", color="gray", linewidth=1)
        else:  # a GPU over a CPU spans decades from network to network
            ax.set_yscale("log")
            plain_log(ax.yaxis, max(bars["speedup"].max(), 1) / min(bars["speedup"].min(), 1))
        ax.axhline(1, color="black", linewidth=0.8)
        handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
        ax.legend([handles[f] for f in frameworks], frameworks, fontsize=7, loc="lower right")
        ax.set(title=panel + (" (dashed: ideal)" if devices > 1 else ""), xticks=range(len(networks)),
               xlabel="network", ylabel="speed-up (labels: efficiency)" if devices > 1 else "speed-up (times)")
        ax.set_xticklabels(networks)
        ax.title.set_fontsize(9)
    if not panels:
        axes[0].axis("off")
    fig.suptitle(f"{dataset}: training speed on several devices over one, on a GPU over a CPU", fontsize=10)
    save(fig, outputs)
