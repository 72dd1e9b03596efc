"""Two result sets compared cell by cell: another machine, last month's run, another config.

Per cell (dataset, network, framework, device, variant, task) and metric: each set's mean, spread and
repetitions, the ratio B ÷ A, and whether the difference is significant (both sets have at least two ok
runs and their ranges over the repetitions do not overlap). Cells only one set has are listed as such;
a cell one set could not measure keeps that set's status and reason.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib.ticker
import pandas as pd

from ..metrics import METRICS
from ..record.io import load_records
from ..tables import CELL_KEYS, markdown_table, ratio_words, read_runs
from ..tables.appendix import appendix, measured
from ..tables.runs import runs_table
from . import FRAMEWORK_COLOURS, save, with_notes

SIDES = ("a", "b")
KEYS = [key for key in CELL_KEYS if key != "machine"]  # two sets' cells are compared whatever they ran on
FIELDS = ("machine", "mean", "sd", "n", "min", "max", "cell")
COLUMNS = ["metric", "unit", *KEYS, *[f"{side}_{field}" for side in SIDES for field in FIELDS], "ratio", "significant",
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


def cells(runs: pd.DataFrame, metric: str, described: pd.DataFrame) -> pd.DataFrame:
    """Per cell of ``metric``'s tasks: the mean, sd, n, min and max over its ok runs that measured it, and what
    the cell says when none did (``described``: the runs' appendix, every metric's, made once per set)."""
    runs = runs[runs["task"].isin(METRICS[metric].tasks)]
    if not len(runs):
        return pd.DataFrame(columns=[*CELL_KEYS, "mean", "sd", "n", "min", "max", "cell"])
    stats = measured(runs, metric).groupby(CELL_KEYS)[metric].agg(["min", "max"])
    texts = described.query("metric == @metric").set_index(CELL_KEYS)[["mean", "sd", "n", "cell"]]
    return texts.join(stats).reset_index()


def compare(a: pd.DataFrame, b: pd.DataFrame, metrics=tuple(METRICS)) -> pd.DataFrame:
    """The runs of set A and of set B, cell by cell, for each of ``metrics`` either set has a value of."""
    rows = []
    described_a, described_b = appendix(a), appendix(b)
    for metric in metrics:
        joined = cells(a, metric, described_a).merge(cells(b, metric, described_b), on=KEYS, how="outer",
                                                     suffixes=("_a", "_b"), indicator=True)
        for row in joined.to_dict("records"):
            if not (row["n_a"] > 0 or row["n_b"] > 0):
                continue  # neither measured it (GPU power of CPU runs)
            out = {"metric": metric, "unit": METRICS[metric].unit, **{key: row[key] for key in KEYS}}
            for side in SIDES:
                out.update({f"{side}_{field}": row[f"{field}_{side}"] for field in FIELDS[:-1]})
                out[f"{side}_cell"] = row[f"cell_{side}"] if pd.notna(row[f"cell_{side}"]) else "not in this set"
            out["ratio"] = out["b_mean"] / out["a_mean"]
            out["significant"] = bool(out["a_n"] >= 2 and out["b_n"] >= 2
                                      and (out["b_min"] > out["a_max"] or out["b_max"] < out["a_min"]))
            out["in"] = {"both": "both", "left_only": "A only", "right_only": "B only"}[row["_merge"]]
            rows.append(out)
    return pd.DataFrame(rows, columns=COLUMNS)


def markdown(compared: pd.DataFrame, label_a: str, label_b: str) -> str:
    head = (f"# {label_b} (B) against {label_a} (A)\n\nRatio B ÷ A of the means over each cell's ok runs; "
            "`significant`: both sets have at least two ok runs and their ranges (min-max over the repetitions) "
            "do not overlap.\n\n")
    shown = compared.assign(ratio=ratio_words(compared["ratio"]),
                            significant=compared["significant"].map({True: "yes", False: ""}))
    shown = shown[["metric", *KEYS, "a_machine", "a_cell", "b_machine", "b_cell", "ratio", "significant", "in"]].rename(
        columns={"a_cell": f"A: {label_a}", "b_cell": f"B: {label_b}", "a_machine": "A's machine",
                 "b_machine": "B's machine"})
    return head + (markdown_table(shown) if len(shown) else "The two sets have no metric in common.") + "\n"


def write(a_dir: Path, b_dir: Path, out_dir: Path, label_a: str | None = None, label_b: str | None = None,
          metric: str = "train_speed") -> list[Path]:
    """The comparison's table (CSV, Markdown) and a figure of ``metric``'s ratios into ``out_dir``."""
    label_a, label_b = label_a or set_name(a_dir), label_b or set_name(b_dir)
    compared = compare(runs_of(a_dir), runs_of(b_dir))
    out_dir.mkdir(parents=True, exist_ok=True)
    outputs = [out_dir / "comparison.csv", out_dir / "comparison.md", out_dir / f"comparison_{metric}.png",
               out_dir / f"comparison_{metric}.svg"]
    compared.to_csv(outputs[0], index=False)
    outputs[1].write_text(markdown(compared, label_a, label_b))
    comparison_figure(compared[compared["metric"] == metric], label_a, label_b, outputs[2:])
    return outputs


def set_name(results: Path) -> str:
    """A result set's name for a reader: its directory, or the project's when it is called ``results``."""
    results = results.resolve()
    return results.parent.name if results.name == "results" else results.name


def comparison_figure(compared: pd.DataFrame, label_a: str, label_b: str, outputs: list[Path]) -> None:
    """One metric of two result sets (dlbench.figures.compare): a bar per cell both measured, its ratio B ÷ A on a log
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
