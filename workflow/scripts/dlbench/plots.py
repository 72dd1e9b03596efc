"""One bar chart per (dataset, network, metric), like the thesis's Figures 5.2-5.4."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from .aggregate import METRICS, appendix, first_line, layer_means, runs_table, setting_order, settings


def figure(records: list[dict], metric: str, outputs: list[Path]) -> None:
    """Grouped bars (framework × device, and variant where there are several: aggregate.settings): the
    mean over the cell's ok runs, error bars = sd. A cell with no value is marked in its slot with
    its status, and the reasons are listed. A cell whose runs were input-bound or contended is
    hatched and says so above its bar. Each bar's SVG id names its cell (``bar <framework> <setting>``)."""
    runs = runs_table(records)
    runs = runs[runs["task"].isin(METRICS[metric].tasks)]
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


def accuracy_curves(records: list[dict], outputs: list[Path]) -> None:
    """Test accuracy against the seconds since the first training step (training and evaluations), one
    colour per framework and setting, one line per run with a mark per epoch: the curve a user reads to
    pick a framework. The target accuracy is dashed; runs without epochs are listed with their status."""
    records = [record for record in records if record["run"]["task"] == "accuracy"]
    run = records[0]["run"]
    table = runs_table(records)
    labels = dict(zip(table["record"], table["framework"] + " " + settings(table)))
    names = sorted(set(labels.values()))
    colours = dict(zip(names, sns.color_palette(n_colors=len(names))))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    notes, shown = [], set()
    for record in records:
        label, epochs = labels[record["path"]], record["quality"].get("epochs") or []
        if not epochs:
            notes.append(f"{label} rep {record['run']['repetition']}: {record['status']}: {first_line(record['reason'])}")
            continue
        ax.plot([0] + [epoch["elapsed_seconds"] for epoch in epochs], [None] + [epoch["test_accuracy"] for epoch in epochs],
                marker="o", markersize=3, color=colours[label], label=None if label in shown else label,
                gid=f"curve {label} rep {record['run']['repetition']}")
        shown.add(label)
    targets = {record["run"].get("target_accuracy") for record in records} - {None}
    for target in targets:
        ax.axhline(target, linestyle="--", color="gray", linewidth=1, label=f"target {target:g}")
    if notes:
        ax.text(0.01, 0.02, "\n".join(sorted(notes)[:8]), transform=ax.transAxes, fontsize=7, color="dimgray")
    ax.set(title=f"{run['dataset']} / {run['network']}: test accuracy over time", ylim=(0, 1.02),
           xlabel="seconds since the first training step (training and evaluations)", ylabel="test top-1 accuracy")
    if shown or targets:
        ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    for path in outputs:
        fig.savefig(path)
    plt.close(fig)


def layer_times(records: list[dict], outputs: list[Path]) -> None:
    """Where a profiled training step's time goes: a panel per framework and setting, a bar per layer of the
    description (in its order, top down), its forward and backward milliseconds stacked (mean over the ok
    runs), and below them the step's time no layer accounts for. Cells without a profile say why."""
    records = [record for record in records if record["run"]["task"] == "profile"]
    run = records[0]["run"]
    means = layer_means(records)
    table = runs_table(records)
    cells = table.assign(setting=table["framework"] + " " + settings(table))
    panels = sorted(cells["setting"].unique())
    height = max(3.0, 0.16 * (means["layer"].nunique() + 2) + 1.2)
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6.5, 4.2 * len(panels)), height), squeeze=False)
    colours = sns.color_palette(n_colors=3)
    for ax, panel in zip(axes[0], panels):
        first = cells[cells["setting"] == panel].iloc[0]
        layers = means[(means[["framework", "device", "variant"]] == first[["framework", "device", "variant"]]).all(axis=1)]
        if not len(layers):
            ax.text(0.5, 0.5, f"{first['status']}: {first['reason']}", ha="center", va="center", wrap=True,
                    fontsize=8, color="firebrick", transform=ax.transAxes)
            ax.set(title=panel, xticks=[], yticks=[])
            continue
        names = [*layers["layer"], "unaccounted"]
        y = range(len(names))
        unaccounted = layers["iteration_ms"].iloc[0] - (layers["forward_ms"] + layers["backward_ms"]).sum()
        ax.barh(list(y)[:-1], layers["forward_ms"], color=colours[0], label="forward", gid=f"forward {panel}")
        ax.barh(list(y)[:-1], layers["backward_ms"], left=layers["forward_ms"], color=colours[1], label="backward",
                gid=f"backward {panel}")
        ax.barh(len(names) - 1, max(unaccounted, 0), color="gray", label="no layer", gid=f"unaccounted {panel}")
        ax.set_yticks(list(y), names, fontsize=6)
        ax.invert_yaxis()
        share = unaccounted / layers["iteration_ms"].iloc[0]
        ax.set(title=f"{panel}\nstep {layers['iteration_ms'].iloc[0]:,.1f} ms, {share:.0%} in no layer",
               xlabel="ms per profiled step")
        ax.title.set_fontsize(8)
        ax.legend(fontsize=7, loc="lower right")
    fig.suptitle(f"{run['dataset']} / {run['network']}: time per layer in a profiled training step", fontsize=10)
    fig.tight_layout()
    for path in outputs:
        fig.savefig(path)
    plt.close(fig)
