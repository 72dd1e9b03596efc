"""The figures: one bar chart per (dataset, network, metric), like the thesis's Figures 5.2-5.4; heatmaps of
training speed and energy per image per dataset; ours beside the thesis; accuracy curves and time per layer."""
from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd
import seaborn as sns

from .aggregate import (
    appendix,
    decimals,
    first_line,
    layer_means,
    runs_table,
    scaling,
    setting_order,
    settings,
)
from .metrics import METRICS
from .registry import REGISTRY as FRAMEWORKS
from .spec import gpu_count
from .thesis import HARDWARE_WORDS

# One colour per framework in every figure, in the registry's order (tab10 has room for ten).
FRAMEWORK_COLOURS = dict(zip(FRAMEWORKS, sns.color_palette("tab10", n_colors=len(FRAMEWORKS))))


def framework_order(names) -> list[str]:
    return [name for name in FRAMEWORKS if name in set(names)]


def with_notes(width: float, height: float, notes: list[str], panels: int = 1):
    """A figure with its plot's ``panels`` side by side on top and, below them, ``notes`` (why cells are
    missing) wrapped to the figure's width, so that they never run under a legend or a bar."""
    lines = [line for note in notes for line in textwrap.wrap(note, width=int(width * 15), subsequent_indent="  ")]
    notes_height = 0.14 * len(lines) + 0.1 if lines else 0.0
    fig = plt.figure(figsize=(width, height + notes_height), layout="constrained")
    grid = fig.add_gridspec(2, panels, height_ratios=[height, max(notes_height, 1e-3)])
    text = fig.add_subplot(grid[1, :])
    text.axis("off")
    text.text(0, 1, "\n".join(lines), va="top", fontsize=7, color="dimgray", transform=text.transAxes)
    return fig, [fig.add_subplot(grid[0, k]) for k in range(panels)]


def figure(records: list[dict], metric: str, outputs: list[Path]) -> None:
    """Grouped bars: a group per device (and variant and task where there are several:
    aggregate.settings), a bar per framework in its colour; the mean over the cell's ok runs, error
    bars = sd. A cell with no value is marked in its slot with its status, and the reasons are listed
    below the plot. A cell whose runs were input-bound, contended or unsteady is hatched and says so
    above its bar. Each bar's SVG id names its cell (``bar <framework> <setting>``)."""
    runs = runs_table(records)
    runs = runs[runs["task"].isin(METRICS[metric].tasks)]
    dataset, network = runs["dataset"].iloc[0], runs["network"].iloc[0]
    table = appendix(runs)
    cells = table.query("metric == @metric")
    cells = cells.assign(setting=settings(cells)).set_index(["framework", "setting"])
    beside = METRICS[metric].beside
    partners = table.query("metric == @beside").pipe(lambda t: t.assign(setting=settings(t))).set_index(
        ["framework", "setting"]) if beside else None
    frameworks = framework_order(runs["framework"])
    slots = setting_order(cells.reset_index())
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
            bar = ax.bar(x - (own / 2 if beside else 0), cell["mean"], own, capsize=3,
                         yerr=None if pd.isna(cell["sd"]) else cell["sd"], color=FRAMEWORK_COLOURS[framework],
                         label=framework, hatch="//" if cell["flags"] else None)
            bar.patches[0].set_gid(f"bar {framework} {slot}")
            partner = partners.loc[(framework, slot)] if beside and (framework, slot) in partners.index else None
            if partner is not None and partner["n"]:  # e.g. the allocator's peak beside the process's
                extra = ax.bar(x + own / 2, partner["mean"], own, color=FRAMEWORK_COLOURS[framework], alpha=0.45,
                               hatch="..", yerr=None if pd.isna(partner["sd"]) else partner["sd"], capsize=3)
                extra.patches[0].set_gid(f"beside {framework} {slot}")
            if cell["flags"]:  # the value says as much about the machine as about the framework
                ax.annotate(cell["flags"].replace(", ", "\n"), (x, cell["mean"] + (0 if pd.isna(cell["sd"]) else
                                                                                     cell["sd"])), xytext=(0, 3),
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
           xlabel="device" if set(runs["variant"]) == {"fp32"} else "device, variant")
    ax.set_xticklabels(slots)
    if not len(cells[cells["n"] > 0]):
        ax.set(yticks=[])
    elif (cells["flags"] != "").any():  # room above the bars for their flags
        ax.set_ylim(top=(cells["mean"] + cells["sd"].fillna(0)).max() * 1.45)
    _save(fig, outputs)


def _plain_log(axis, span: float) -> None:
    """A log axis labelled in plain numbers at 1, 2 and 5 of each decade (at each decade alone where it spans
    many), not in powers of ten."""
    axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5) if span < 1e3 else (1,)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:,.6g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def _save(fig, outputs: list[Path]) -> None:
    """Every figure is laid out by matplotlib's constrained layout (made with ``layout="constrained"``)."""
    for path in outputs:
        fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def heatmap(table: pd.DataFrame, dataset: str, metric: str, outputs: list[Path]) -> None:
    """Which framework, at a glance: per device (and variant), a framework × network grid of a training metric
    against the best framework's on that network (1.00 = the best: the fastest, or the one that took the least
    energy per image; ``Metric.best``), the value beneath. A cell without a value is grey with its status; a
    framework the config did not run on a network is blank."""
    spec, words = METRICS[metric], metric.replace("_", " ")
    values = table[(table["metric"] == metric) & (table["task"] == "train") & (table["dataset"] == dataset)]
    if spec.needs == "gpu":  # no panel of CPU runs that could not have measured it
        values = values[values["device"].map(gpu_count) > 0]
    values = values.assign(setting=settings(values))
    panels = setting_order(values)
    networks = sorted(values["network"].unique())
    frameworks = framework_order(values["framework"])
    size = (1.3 * len(networks) * len(panels) + 2.5, 0.45 * len(frameworks) + 1.8)
    fig, axes = plt.subplots(1, len(panels), figsize=size, squeeze=False, layout="constrained")
    for ax, panel in zip(axes[0], panels):
        cells = values[values["setting"] == panel].set_index(["framework", "network"])
        means = cells["mean"].unstack("network").reindex(index=frameworks, columns=networks)
        relative = means / means.max() if spec.best == "max" else means.min() / means
        sns.heatmap(relative, ax=ax, vmin=0, vmax=1, cmap="viridis", cbar=panel == panels[-1], annot=False,
                    linewidths=0.5, linecolor="white", cbar_kws={"label": (
                        "this one's ÷ the best's" if spec.best == "max" else "the best's ÷ this one's")})
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
    fig.suptitle(textwrap.fill(f"{dataset}: {words} against the best framework per network ({spec.unit} below)",
                               width=int(fig.get_figwidth() * 12)), fontsize=10)
    _save(fig, outputs)


def thesis_figure(compared: pd.DataFrame, outputs: list[Path]) -> None:
    """Ours against the thesis's, log-log, a panel per metric and thesis hardware: a point per cell both
    measured, in its framework's colour and its case's marker (network and dataset); on the diagonal we measured
    what the thesis did. Cells only one side measured are listed below."""
    both = compared.dropna(subset=["ours_mean", "thesis"])
    panels = sorted(both[["metric", "hardware"]].drop_duplicates().itertuples(index=False), key=tuple)
    one_side = compared[compared[["ours_mean", "thesis"]].isna().any(axis=1)]
    notes = [f"{row.dataset} / {row.network} / {row.framework} / {row.device}: {row.metric} "
             f"{'not measured here (' + row.ours + ')' if pd.isna(row.ours_mean) else 'not in the thesis'}"
             f" [{HARDWARE_WORDS[row.hardware]}]" for row in one_side.itertuples()]
    if not panels:
        notes.insert(0, "No cell was measured both here and in the thesis.")
    shown = notes[:25] + ([f"... and {len(notes) - 25} more (results/tables/thesis.csv)"] if len(notes) > 25 else [])
    fig, axes = with_notes(max(5.5, 4.2 * max(len(panels), 1)), 4.2, shown, max(len(panels), 1))
    cases = sorted({f"{row.network} / {row.dataset}" for row in both.itertuples()})
    markers = dict(zip(cases, "osD^vP*Xph<>H8d"))
    for ax, (metric, hardware) in zip(axes, panels):
        points = both[(both["metric"] == metric) & (both["hardware"] == hardware)]
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
            _plain_log(axis, high / low)
    handles = [plt.Line2D([], [], color=FRAMEWORK_COLOURS[f], marker="o", linestyle="") for f in
               framework_order(both["framework"])] + [
        plt.Line2D([], [], color="gray", marker=markers[case], linestyle="") for case in cases]
    axes[-1].legend(handles, [*framework_order(both["framework"]), *cases], fontsize=7, loc="upper left",
                    bbox_to_anchor=(1.02, 1), borderaxespad=0)
    if not panels:
        axes[0].axis("off")
    _save(fig, outputs)


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
    _save(fig, outputs)


def iteration_times(records: list[dict], outputs: list[Path]) -> None:
    """Every step of every training run of a cell, warm-up included (shaded): milliseconds per step against
    the step's number, a line per run in its framework's colour, a panel per setting. Jitter, the first
    step's compilation and the warm-up's settling are there to see; the means in the other figures hide them."""
    records = [record for record in records if record["run"]["task"] == "train"]
    table = runs_table(records)
    panels = setting_order(table)
    labels = dict(zip(table["record"], settings(table)))
    run = records[0]["run"]
    missing = [f"{r['run']['framework']} {labels[r['path']]} rep {r['run']['repetition']}: {r['status']}: "
               f"{first_line(r['reason'])}" for r in records if not r["timing"]["iteration_seconds"]]
    fig, axes = with_notes(max(6.5, 4.5 * len(panels)), 4, sorted(missing), len(panels))
    for ax, panel in zip(axes, panels):
        warmups, shortest, longest = set(), float("inf"), 0.0
        for record in (r for r in records if labels[r["path"]] == panel and r["timing"]["iteration_seconds"]):
            framework, times = record["run"]["framework"], record["timing"]["iteration_seconds"]
            ax.plot(range(1, len(times) + 1), [t * 1e3 for t in times], color=FRAMEWORK_COLOURS[framework],
                    linewidth=0.8, alpha=0.8, label=framework, gid=f"steps {framework} {panel} rep "
                                                                  f"{record['run']['repetition']}")
            warmups.add(record["run"]["warmup_iterations"])
            shortest, longest = min(shortest, min(times)), max(longest, max(times))
        for warmup in warmups:
            ax.axvspan(0.5, warmup + 0.5, color="gray", alpha=0.15, linewidth=0)
        handles = dict(zip(*reversed(ax.get_legend_handles_labels())))
        shown = framework_order(handles)
        ax.legend([handles[f] for f in shown], shown, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1),
                  borderaxespad=0)
        ax.set(yscale="log", title=f"{panel} (shaded: warm-up, not timed)", xlabel="step", ylabel="ms per step")
        if longest:
            _plain_log(ax.yaxis, longest / shortest)
        ax.title.set_fontsize(9)
    fig.suptitle(f"{run['dataset']} / {run['network']}: time of every training step", fontsize=10)
    _save(fig, outputs)


def scaling_figure(table: pd.DataFrame, dataset: str, outputs: list[Path]) -> None:
    """Speed-up on several devices over one (aggregate.scaling), a group per network, a bar per framework in
    its colour, a panel per device and variant, the ideal (as many times as devices) dashed."""
    scaled = scaling(table[table["dataset"] == dataset])
    scaled = scaled.assign(panel=scaled["device"] + (" " + scaled["variant"]).where(scaled["variant"] != "fp32", ""))
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
    _save(fig, outputs)


def accuracy_curves(records: list[dict], outputs: list[Path]) -> None:
    """Test accuracy against the seconds since the first training step (training and evaluations), one
    colour per framework and setting, one line per run with a mark per epoch: the curve a user reads to
    pick a framework. The target accuracy is dashed; runs without epochs are listed with their status."""
    records = [record for record in records if record["run"]["task"] == "accuracy"]
    run = records[0]["run"]
    table = runs_table(records)
    labels = dict(zip(table["record"], table["framework"] + " " + settings(table)))
    frameworks = dict(zip(table["record"], table["framework"]))
    styles = dict(zip(sorted(set(settings(table))), ["-", "--", ":", "-."] * 4))  # a setting's line style
    # runs without epochs, once per reason: "cntk cpu accuracy (rep 1, 2, 3): unavailable: ..."
    missing = {}
    for record in records:
        if not record["quality"].get("epochs"):
            why = f"{labels[record['path']]} (rep {{}}): {record['status']}: {first_line(record['reason'])}"
            missing.setdefault(why, []).append(str(record["run"]["repetition"]))
    fig, (ax,) = with_notes(7, 4.5, sorted(why.format(", ".join(reps)) for why, reps in missing.items()))
    shown = set()
    for record in records:
        label, epochs = labels[record["path"]], record["quality"].get("epochs") or []
        if not epochs:
            continue
        ax.plot([0] + [epoch["elapsed_seconds"] for epoch in epochs],
                [None] + [epoch["test_accuracy"] for epoch in epochs],
                marker="o", markersize=3, color=FRAMEWORK_COLOURS[frameworks[record["path"]]],
                linestyle=styles[label.split(" ", 1)[1]], label=None if label in shown else label,
                gid=f"curve {label} rep {record['run']['repetition']}")
        shown.add(label)
    targets = {record["run"].get("target_accuracy") for record in records} - {None}
    for target in targets:
        ax.axhline(target, linestyle="--", color="gray", linewidth=1, label=f"target {target:g}")
    ax.set(title=f"{run['dataset']} / {run['network']}: test accuracy over time", ylim=(0, 1.02),
           xlabel="seconds since the first training step (training and evaluations)", ylabel="test top-1 accuracy")
    if shown or targets:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    _save(fig, outputs)


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
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6.5, 4.2 * len(panels)), height), squeeze=False,
                             layout="constrained")
    colours = sns.color_palette(n_colors=3)
    for ax, panel in zip(axes[0], panels):
        first = cells[cells["setting"] == panel].iloc[0]
        keys = ["framework", "device", "variant"]
        layers = means[(means[keys] == first[keys]).all(axis=1)]
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
    _save(fig, outputs)
