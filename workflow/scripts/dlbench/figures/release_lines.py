"""The release lines as a figure: each framework's speed at each of its releases, against the release's date, cell by
cell (tables.release_lines), with the thesis's value where its Appendix A has the cell."""
from __future__ import annotations

from pathlib import Path

import matplotlib.dates as mdates
import pandas as pd

from ..registry import REGISTRY, base_of
from ..tables.release_lines import LINE_KEYS, harness
from . import FRAMEWORK_COLOURS, save, with_notes


def thesis_values(thesis: pd.DataFrame | None) -> dict[tuple, float]:
    """The thesis's training speed per (framework, dataset, network, device), from thesis.csv (any of a framework's
    releases: the thesis's number is one)."""
    if thesis is None or thesis.empty:
        return {}
    speeds = thesis[(thesis["metric"] == "train_speed") & thesis["thesis"].notna()]
    return {(base_of(row.framework), row.dataset, row.network, row.device): float(row.thesis)
            for row in speeds.itertuples()}


def release_lines_figure(points: pd.DataFrame, thesis: pd.DataFrame | None, outputs: list[Path]) -> None:
    """A panel per cell (dataset, network, where it ran, variant, task): each framework's line through its
    releases' speeds against their dates (log scale), each point's 95 % interval as error bars, each labelled with
    its version, in the framework's colour, consecutive releases joined by a line, dashed where the two ran in
    different harnesses (release_lines.csv's also_changed: a step there measures both changes); the thesis's value for
    a training cell, where Appendix A has it and the line holds the thesis's release, a star at that release's date.
    A release without a known date is left out, and said."""
    dated = points[points["released"].fillna("") != ""]
    undated = points[points["released"].fillna("") == ""]
    notes = [f"{row.release} {row.version} ({row.dataset}, {row.network}): no release date known, left out"
             for row in undated.drop_duplicates(["release", "dataset", "network"]).itertuples()]
    if points.empty:
        notes = ["No framework ran at two releases or more in any cell (config releases)."]
    elif dated["release"].map(harness).groupby(dated["framework"]).nunique().gt(1).any():
        notes.append("A dashed segment joins two releases that ran in different harnesses (a worker on an older "
                     "CPython, today's backend in the runner's process): its change is the release's and the "
                     "harness's together.")
    cells = list(dated.groupby(LINE_KEYS, sort=True, dropna=False))  # a key may be missing (no hardware target)
    columns = min(max(len(cells), 1), 3)
    fig, axes = with_notes(5.5 * columns, 4 * -(-max(len(cells), 1) // 3), notes, columns,
                           -(-max(len(cells), 1) // 3))
    marks = thesis_values(thesis)
    for ax, (cell, shown) in zip(axes, cells):
        setting = dict(zip(LINE_KEYS, cell))
        for framework, line in shown.groupby("framework", sort=True):
            when = pd.to_datetime(line["released"])
            bounds = [(line["estimate"] - line["low"]).fillna(0), (line["high"] - line["estimate"]).fillna(0)]
            colour = FRAMEWORK_COLOURS.get(framework, "grey")
            ax.errorbar(when, line["estimate"], yerr=bounds, marker="o", color=colour, capsize=3, linestyle="none",
                        label=framework, gid=f"line {framework} {' '.join(map(str, cell))}")
            harnesses = line["release"].map(harness).to_numpy()
            for k in range(len(line) - 1):
                changed = harnesses[k] != harnesses[k + 1]
                ax.plot(when.iloc[k:k + 2], line["estimate"].iloc[k:k + 2], color=colour,
                        linestyle="--" if changed else "-",
                        gid=f"{'harness changed' if changed else 'same harness'} {framework} "
                            f"{line['version'].iloc[k]} {line['version'].iloc[k + 1]}")
            for moment, speed, version in zip(when, line["estimate"], line["version"]):
                ax.annotate(version, (moment, speed), xytext=(3, 3), textcoords="offset points", fontsize=6)
            published = marks.get((framework, setting["dataset"], setting["network"], setting["device"]))
            theirs = line["release"].map(lambda name: getattr(REGISTRY.get(name), "release", "") == "thesis").to_numpy()
            if published and setting["task"] == "train" and theirs.any():
                ax.plot(when[theirs].iloc[0], published, marker="*", markersize=11, color=colour, linestyle="none",
                        markeredgecolor="black", label=f"{framework}: the thesis's", gid=f"thesis {framework}")
        ax.set_yscale("log")
        ax.xaxis.set_major_locator(mdates.YearLocator())
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y"))
        ax.set(title=f"{setting['dataset']}, {setting['network']}: {setting['device']} {setting['variant']} "
                     f"{setting['task']}", ylabel=f"{shown['metric'].iloc[0].replace('_', ' ')} (images/s)",
               xlabel="release date")
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7)
    for ax in axes[len(cells):]:
        ax.axis("off")
    fig.suptitle("Release lines: each framework's speed at each release, with its 95 % interval", fontsize=10)
    save(fig, outputs)
