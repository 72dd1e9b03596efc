"""A cell's grouped bars of one metric."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd

from ..metrics import METRICS
from ..tables import setting_order, settings
from . import FRAMEWORK_COLOURS, framework_order, save, with_notes


def interval_error(cell) -> list[list[float]] | None:
    """A cell's 95 % interval as matplotlib's error bar below and above its estimate; none for one run."""
    return None if pd.isna(cell["low"]) else [[cell["estimate"] - cell["low"]], [cell["high"] - cell["estimate"]]]


def top(cell) -> float:
    """Where a cell's bar and its error bar end."""
    return cell["estimate"] if pd.isna(cell["high"]) else cell["high"]


def bars(table: pd.DataFrame, dataset: str, network: str, metric: str, outputs: list[Path],
         hardware: Sequence[str] = ()) -> None:
    """Grouped bars of the appendix's cells of ``metric`` on a dataset and network: a group per device (and variant and
    task where there are several: tables.settings; targets in the order ``hardware`` names them), a bar per framework in
    its colour; the cell's estimate over its ok runs, error bars its 95 % interval (dlbench.stats; none for a cell of
    one run). A cell with no value is marked in its slot with its
    status, and the reasons are listed below the plot. A cell whose runs were input-bound, contended or unsteady is
    hatched and says so above its bar. Each bar's SVG id names its cell (``bar <framework> <setting>``)."""
    table = table[(table["dataset"] == dataset) & (table["network"] == network)
                  & table["task"].isin(METRICS[metric].tasks)]
    cells = table[table["metric"] == metric]
    variants = set(cells["variant"])
    frameworks = framework_order(cells["framework"])
    cells = cells.assign(setting=settings(cells)).set_index(["framework", "setting"])
    beside = METRICS[metric].beside
    partners = table.query("metric == @beside").pipe(lambda t: t.assign(setting=settings(t))).set_index(
        ["framework", "setting"]) if beside else None
    slots = setting_order(cells.reset_index(), hardware)
    width = 0.8 / len(frameworks)
    missing = cells[cells["n"] == 0]
    notes = sorted({f"{framework} / {slot}: {text}" for (framework, slot), text in missing["cell"].items()})
    fig, (ax,) = with_notes(max(5.5, 0.45 * len(frameworks) * len(slots) + 3.5), 4, notes)
    for slot, framework in ((d, f) for d in slots for f in frameworks):
        if (framework, slot) not in cells.index:
            continue
        cell = cells.loc[(framework, slot)]
        x = slots.index(slot) - 0.4 + width * (frameworks.index(framework) + 0.5)
        if cell["n"]:
            own = width / 2 if beside else width
            bar = ax.bar(x - (own / 2 if beside else 0), cell["estimate"], own, capsize=3,
                         yerr=interval_error(cell), color=FRAMEWORK_COLOURS[framework],
                         label=framework, hatch="//" if cell["flags"] else None)
            bar.patches[0].set_gid(f"bar {framework} {slot}")
            partner = partners.loc[(framework, slot)] if beside and (framework, slot) in partners.index else None
            if partner is not None and partner["n"]:  # e.g. the allocator's peak beside the process's
                extra = ax.bar(x + own / 2, partner["estimate"], own, color=FRAMEWORK_COLOURS[framework], alpha=0.45,
                               hatch="..", yerr=interval_error(partner), capsize=3)
                extra.patches[0].set_gid(f"beside {framework} {slot}")
            if cell["flags"]:  # the value says as much about the machine as about the framework
                ax.annotate(cell["flags"].replace(", ", "\n"), (x, top(cell)), xytext=(0, 3),
                            textcoords="offset points", rotation=90, ha="center", va="bottom", fontsize=7,
                            color="darkorange", gid=f"flags {framework} {slot}")
        else:  # no bar, never a zero: the status where the bar would stand, in the framework's colour
            ax.text(x, 0, f"{framework}: {cell['cell'].split(':')[0]}", rotation=90, ha="center", va="bottom",
                    fontsize=7, color="firebrick", gid=f"missing {framework} {slot}",
                    bbox={"facecolor": "white", "edgecolor": FRAMEWORK_COLOURS[framework], "pad": 1.5})
    handles, labels = [plt.Rectangle((0, 0), 1, 1, color=FRAMEWORK_COLOURS[f]) for f in frameworks], frameworks
    if beside:
        handles += [plt.Rectangle((0, 0), 1, 1, color="gray"), plt.Rectangle((0, 0), 1, 1, color="gray", alpha=0.45,
                                                                              hatch="..")]
        labels += [metric.replace("_", " "), beside.replace("_", " ")]
    ax.legend(handles, labels, fontsize=8, title="framework", loc="upper left", bbox_to_anchor=(1.01, 1),
              borderaxespad=0)
    ax.set(title=f"{dataset} / {network}: {metric.replace('_', ' ')}", ylabel=METRICS[metric].unit,
           xticks=range(len(slots)), xlim=(-0.5, len(slots) - 0.5),
           xlabel="device" if variants == {"fp32"} else "device, variant")
    ax.set_xticklabels(slots)
    if not len(cells[cells["n"] > 0]):
        ax.set(yticks=[])
    elif (cells["flags"] != "").any():  # room above the bars for their flags
        ax.set_ylim(top=cells[cells["n"] > 0].apply(top, axis=1).max() * 1.45)
    save(fig, outputs)
