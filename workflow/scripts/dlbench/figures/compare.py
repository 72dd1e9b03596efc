"""Two result sets compared cell by cell: another machine, last month's run, another config.

Per cell (dataset, network, framework, device, variant, task) and metric: each set's estimate, 95 % interval and
repetitions, the ratio B ÷ A with its 95 % interval, and the verdict (dlbench.stats.ratio: faster or slower where
the interval excludes 1 and the ratio lies beyond the threshold, the same where the interval lies within it, else
not resolved, with the repetitions that would resolve it). Cells only one set has are listed as such; a cell one set
could not measure keeps that set's status and reason.
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import matplotlib.ticker
import pandas as pd

from .. import files, stats
from ..metrics import METRICS
from ..record.io import load_records
from ..tables import CELL_KEYS, markdown_table, read_runs, summary, verdict_columns
from ..tables.appendix import appendix
from ..tables.runs import runs_table
from . import FRAMEWORK_COLOURS, save, with_notes

SIDES = ("a", "b")
KEYS = [key for key in CELL_KEYS if key != "machine"]  # two sets' cells are compared whatever they ran on
FIELDS = ("machine", "estimate", "low", "high", "n", "centre", "spread", "log", "cell")
RATIO = ("ratio", "ratio_low", "ratio_high", "ratio_text", "verdict")
# A metric over a denominator each set measures once (the metric of its numerator, the denominator's name): its
# ratio's interval holds the runs' noise but not the denominator's, which differs between sets as much as a run does
ONE_MEASUREMENT_DENOMINATOR = {"ceiling_fraction": ("achieved_tflops", "ceilings")}
COLUMNS = ["metric", "unit", *KEYS, *[f"{side}_{field}" for side in SIDES for field in FIELDS], *RATIO, "resolved",
           "in"]


def runs_of(results: Path) -> pd.DataFrame:
    """A result set's runs: its ``tables/runs.csv``, else the records under its ``runs/``."""
    table = results / "tables" / "runs.csv"
    if table.exists():
        return read_runs(table)
    records = sorted((results / "runs").rglob("rep*.json"))
    if not records:
        raise FileNotFoundError(f"{results} holds no results: neither tables/runs.csv nor runs/**/rep*.json")
    return runs_table(load_records(records))


def compare(a: pd.DataFrame, b: pd.DataFrame, metrics=tuple(METRICS), threshold: float = stats.THRESHOLD,
            contended: str = "leave_out") -> pd.DataFrame:
    """The runs of set A and of set B, cell by cell, for each of ``metrics`` either set has a value of: each set's
    cells as its appendix makes them (``contended``: :func:`dlbench.tables.appendix.counted`), B's over A's with
    its interval and verdict at ``threshold``; ``resolved``: the verdict is faster or slower (or higher, lower)."""
    described_a, described_b = appendix(a, contended), appendix(b, contended)
    out = []
    for metric in metrics:
        sides = [described[described["metric"] == metric][[*KEYS, *FIELDS]] for described in (described_a,
                                                                                               described_b)]
        joined = sides[0].merge(sides[1], on=KEYS, how="outer", suffixes=("_a", "_b"), indicator=True)
        joined = joined[(joined["n_a"] > 0) | (joined["n_b"] > 0)]  # neither measured it (GPU power of CPU runs)
        if not len(joined):
            continue
        table = pd.DataFrame({"metric": metric, "unit": METRICS[metric].unit, **{key: joined[key] for key in KEYS}},
                             index=joined.index)
        for side in SIDES:
            table = table.assign(**{f"{side}_{field}": joined[f"{field}_{side}"] for field in FIELDS})
            table[f"{side}_cell"] = table[f"{side}_cell"].fillna("not in this set")
            table[f"{side}_n"] = table[f"{side}_n"].fillna(0).astype(int)
        ratios = [stats.ratio(*(summary(row, f"{side}_") for side in SIDES), threshold)
                  for row in table.to_dict("records")]
        if metric in ONE_MEASUREMENT_DENOMINATOR:
            ratios = _unjudged_denominators(ratios, table, a, b, metric)
        table = table.assign(**verdict_columns(ratios, METRICS[metric].comparative),
                             resolved=[r.verdict in (stats.HIGHER, stats.LOWER) for r in ratios],
                             **{"in": joined["_merge"].map({"both": "both", "left_only": "A only",
                                                            "right_only": "B only"}).astype(str)})
        out.append(table)
    return pd.concat(out, ignore_index=True)[COLUMNS] if out else pd.DataFrame(columns=COLUMNS)


def _unjudged_denominators(ratios: list[stats.Ratio], table: pd.DataFrame, a: pd.DataFrame, b: pd.DataFrame,
                           metric: str) -> list[stats.Ratio]:
    """``metric``'s ratios, not resolved where the two sets divided by different denominators (each set's ceiling,
    measured once): the interval holds the runs' spread, not the denominators'."""
    numerator, name = ONE_MEASUREMENT_DENOMINATOR[metric]

    def denominators(runs: pd.DataFrame) -> pd.Series:
        measured = runs.assign(denominator=runs[numerator] / runs[metric]).dropna(subset=["denominator"])
        return measured.groupby(KEYS, dropna=False)["denominator"].median()

    sides = [denominators(runs) for runs in (a, b)]
    judged = []
    for key, ratio in zip(table[KEYS].itertuples(index=False, name=None), ratios, strict=True):
        found = [side.get(key) for side in sides]
        if None in found or math.isnan(ratio.value) or math.isclose(*found, rel_tol=1e-6):
            judged.append(ratio)
            continue
        judged.append(dataclasses.replace(ratio, verdict=stats.NOT_RESOLVED, needed=None, why=(
            f"B's {name} are ×{found[1] / found[0]:.3g} A's: each is one measurement, whose noise the "
            f"interval does not hold")))
    return judged


def markdown(compared: pd.DataFrame, label_a: str, label_b: str, threshold: float = stats.THRESHOLD) -> str:
    head = (f"# {label_b} (B) against {label_a} (A)\n\nRatio B ÷ A of each cell's estimates with its 95 % "
            f"interval, and the verdict (docs/statistics.md): faster or slower where the interval excludes 1 and the "
            f"ratio lies beyond {threshold:.0%}, the same where the interval lies within ±{threshold:.0%}, else "
            f"not resolved, with the runs per set that would resolve it.\n\n")
    shown = compared[["metric", *KEYS, "a_machine", "a_cell", "b_machine", "b_cell", "ratio_text", "verdict",
                      "in"]].rename(columns={"a_cell": f"A: {label_a}", "b_cell": f"B: {label_b}",
                                             "a_machine": "A's machine", "b_machine": "B's machine",
                                             "ratio_text": "B ÷ A [95 % CI]"})
    return head + (markdown_table(shown) if len(shown) else "The two sets have no metric in common.") + "\n"


def write(a_dir: Path, b_dir: Path, out_dir: Path, label_a: str | None = None, label_b: str | None = None,
          metric: str = "train_speed", threshold: float = stats.THRESHOLD, contended: str = "leave_out") -> list[Path]:
    """The comparison's table (CSV, Markdown) and a figure of ``metric``'s ratios into ``out_dir``."""
    label_a, label_b = label_a or set_name(a_dir), label_b or set_name(b_dir)
    compared = compare(runs_of(a_dir), runs_of(b_dir), threshold=threshold, contended=contended)
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = [out_dir / "comparison.csv", out_dir / "comparison.md", out_dir / f"comparison_{metric}.png",
               out_dir / f"comparison_{metric}.svg"]
    files.write_text(outputs[0], compared.to_csv(index=False))
    files.write_text(outputs[1], markdown(compared, label_a, label_b, threshold))
    comparison_figure(compared[compared["metric"] == metric], label_a, label_b, outputs[2:])
    return outputs


def set_name(results: Path) -> str:
    """A result set's name for a reader: its directory, or the project's when it is called ``results``."""
    results = results.resolve()
    return results.parent.name if results.name == "results" else results.name


def comparison_figure(compared: pd.DataFrame, label_a: str, label_b: str, outputs: list[Path]) -> None:
    """One metric of two result sets (dlbench.figures.compare): a bar per cell both measured, its ratio B ÷ A on a log
    axis, its 95 % interval as error bars (none where a set has one run), in its framework's colour; resolved
    differences solid and starred, the others faint. Cells only one set measured are listed below."""
    both = compared.dropna(subset=["ratio"]).sort_values(["dataset", "network", "device", "variant", "task",
                                                          "framework"], ignore_index=True)
    one_side = compared[compared["ratio"].isna()]
    notes = [f"{row.dataset} / {row.network} / {row.framework} / {row.device} {row.variant} {row.task}: "
             f"A {row.a_cell}; B {row.b_cell}" for row in one_side.itertuples()]
    metric = compared["metric"].iloc[0] if len(compared) else "metric"
    fig, (ax,) = with_notes(8, max(2.5, 0.28 * len(both) + 1.5), notes[:30] + (
        [f"... and {len(notes) - 30} more (comparison.csv)"] if len(notes) > 30 else []))
    for y, row in both.iterrows():
        bounds = not pd.isna(row["ratio_low"])
        ax.barh(y, row["ratio"] - 1, left=1, height=0.6, color=FRAMEWORK_COLOURS.get(row["framework"], "gray"),
                alpha=1.0 if row["resolved"] else 0.4,
                xerr=[[row["ratio"] - row["ratio_low"]], [row["ratio_high"] - row["ratio"]]] if bounds else None,
                capsize=2, gid=f"ratio {row['framework']} {row['dataset']} {row['network']} {row['device']} "
                               f"{row['variant']} {row['task']}")
        if row["resolved"]:
            ax.annotate("*", (row["ratio_high"], y), xytext=(3, 0), textcoords="offset points", va="center")
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
           xlabel="B ÷ A with its 95 % interval (* resolved: the interval excludes 1, the ratio beyond the threshold)")
    save(fig, outputs)
