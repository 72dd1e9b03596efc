"""Two result sets, one metric: B ÷ A per cell."""
from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import pandas as pd

from . import FRAMEWORK_COLOURS, save, with_notes


def comparison_figure(compared: pd.DataFrame, label_a: str, label_b: str, outputs: list[Path]) -> None:
    """One metric of two result sets (dlbench.compare): a bar per cell both measured, its ratio B ÷ A on a log
    axis, the range of the ratio over the repetitions as error bars (B's min over A's max to B's max over A's
    min), in its framework's colour; significant differences solid and starred, the others faint. Cells only
    one set measured are listed below."""
    both = compared.dropna(subset=["ratio"]).sort_values(["dataset", "network", "device", "variant", "task",
                                                          "framework"], ignore_index=True)
    one_side = compared[compared["ratio"].isna()]
    notes = [f"{row.dataset} / {row.network} / {row.framework} / {row.device} {row.variant} {row.task}: "
             f"A {row.a_cell}; B {row.b_cell}" for row in one_side.itertuples()]
    metric = compared["metric"].iloc[0] if len(compared) else "metric"
    fig, (ax,) = with_notes(8, max(2.5, 0.28 * len(both) + 1.5), notes[:30] + (
        [f"... and {len(notes) - 30} more (comparison.csv)"] if len(notes) > 30 else []))
    for y, row in both.iterrows():
        low, high = row["b_min"] / row["a_max"], row["b_max"] / row["a_min"]
        ax.barh(y, row["ratio"] - 1, left=1, height=0.6, color=FRAMEWORK_COLOURS.get(row["framework"], "gray"),
                alpha=1.0 if row["significant"] else 0.4, xerr=[[row["ratio"] - low], [high - row["ratio"]]],
                capsize=2, gid=f"ratio {row['framework']} {row['dataset']} {row['network']} {row['device']} "
                               f"{row['variant']} {row['task']}")
        if row["significant"]:
            ax.annotate("*", (high, y), xytext=(3, 0), textcoords="offset points", va="center")
    if len(both):
        ax.set_yticks(range(len(both)), [f"{r.dataset} / {r.network} / {r.framework} / {r.device}"
                                         + ("" if r.variant == "fp32" else f" {r.variant}")
                                         + ("" if r.task == "train" else f" {r.task}") for r in both.itertuples()],
                      fontsize=7)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.axvline(1, color="black", linewidth=0.8)
        ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
        ax.xaxis.set_minor_locator(matplotlib.ticker.LogLocator(subs=(1, 1.1, 1.25, 1.5, 2, 3, 4, 5, 6, 8)))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"×{value:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"×{value:g}"))
        ax.tick_params(axis="x", which="minor", labelsize=6)
    else:
        ax.text(0.5, 0.5, "no cell was measured in both sets", ha="center", va="center", transform=ax.transAxes)
        ax.set(yticks=[])
    ax.set(title=f"{metric.replace('_', ' ')}: {label_b} (B) over {label_a} (A)",
           xlabel="B ÷ A (1: the same; * significant: the ranges over the repetitions do not overlap)")
    save(fig, outputs)
