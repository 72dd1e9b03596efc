"""The accuracy table: the appendix's accuracy cells beside what the runs were and seed 003's published figures."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import files
from . import CELL_KEYS, decimals, markdown_table, read_appendix, read_runs, target_rank
from .appendix import CELL_WORDS

# Seed 003's published P100 and K80 results, set beside the accuracy runs of its cases
SEED_003 = Path(__file__).parents[3] / "resources" / "seed003_published.csv"


SEED_003_CASE = {"epochs": 10, "batch_size_global": 10, "input_size": 224}


ACCURACY_COLUMNS = ("test_accuracy", "time_to_accuracy", "total_time", "train_speed")
# Seed 003's two tables: its total training time of 10 epochs and its test accuracy after them
SEED_003_LAYOUT = {"total_time": "Time(s)", "test_accuracy": "Acc"}


def accuracy_table(runs: pd.DataFrame, appendix: pd.DataFrame) -> pd.DataFrame:
    """One row per accuracy cell: its epochs, batch and target, the appendix's cells of its accuracy, time to
    accuracy, total time and training speed, what its data means, and seed 003's published figures where the
    dataset (real), network and epochs are the seed's."""
    runs = runs[runs["task"] == "accuracy"]
    keys = [key for key in CELL_KEYS if key != "task"]
    columns = [*keys, "data_mode", "epochs", "batch_size_global", "target_accuracy",
               *ACCURACY_COLUMNS, "data", "seed 003 P100", "seed 003 K80", "differs from seed 003"]
    if not len(runs):
        return pd.DataFrame(columns=columns)
    cells = appendix[appendix["task"] == "accuracy"].pivot_table(index=keys, columns="metric", values="cell",
                                                                 aggfunc="first")
    published = pd.read_csv(SEED_003, comment="#")
    rows = []
    for key, group in runs.groupby(keys, sort=True):
        first = group.iloc[0]
        row = dict(zip(keys, key), data_mode=first["data_mode"], epochs=first["epochs"],
                   batch_size_global=first["batch_size_global"], target_accuracy=first["target_accuracy"],
                   **{metric: cells.loc[key].get(metric, "") for metric in ACCURACY_COLUMNS})
        row.update(dict.fromkeys(("seed 003 P100", "seed 003 K80", "differs from seed 003"), ""))
        row["data"] = ("the real dataset" if first["data_mode"] == "real" else
                       "generated stand-in: its accuracy checks the plumbing, it says nothing of the network's")
        seed = published[(published["dataset"] == first["dataset"]) & (published["network"] == first["network"])]
        if first["data_mode"] == "real" and first["epochs"] == SEED_003_CASE["epochs"] and len(seed):
            for gpu, result in seed.set_index("gpu").iterrows():
                row[f"seed 003 {gpu}"] = f"{result['accuracy']:.2%} in {result['seconds']:,.0f} s"
            differences = []
            if first["batch_size_global"] != SEED_003_CASE["batch_size_global"]:
                differences.append(f"batch {first['batch_size_global']} (seed's {SEED_003_CASE['batch_size_global']})")
            if first.get("input_size") != SEED_003_CASE["input_size"]:
                differences.append(f"the dataset's own input size (seed's {SEED_003_CASE['input_size']}x"
                                   f"{SEED_003_CASE['input_size']} RGB)")
            row["differs from seed 003"] = ", ".join(differences)
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def seed003_layout(appendix: pd.DataFrame, metric: str, hardware: Sequence[str] = ()) -> pd.DataFrame:
    """The accuracy runs' ``metric`` as seed 003 laid out its tables: a row per framework and network, a column
    per target (in the config's order) and dataset, each cell's mean (time in seconds, accuracy in percent)."""
    cells = appendix[(appendix["metric"] == metric) & (appendix["task"] == "accuracy") & (appendix["n"] > 0)]
    if not len(cells):
        return pd.DataFrame()
    targets = sorted(cells["hardware"].unique(), key=lambda name: target_rank(name, hardware))
    shown = cells.assign(column=(cells["hardware"] + ": ").where(cells["hardware"] != "", "") + cells["device"]
                         + " " + cells["dataset"],
                         value=[f"{mean:.2%}" if metric == "test_accuracy" else f"{mean:,.{decimals(mean)}f}"
                                for mean in cells["mean"]])
    order = [column for target in targets for column in
             shown[shown["hardware"] == target].sort_values(["device", "dataset"])["column"].drop_duplicates()]
    wide = shown.pivot_table(index=["framework", "network"], columns="column", values="value", aggfunc="first")
    wide = wide[order].fillna("—")
    wide.columns.name = None
    return wide.reset_index()


def write_accuracy(runs_csv: Path, appendix_csv: Path, csv_out: Path, md_out: Path,
                   hardware: Sequence[str] = ()) -> None:
    appendix = read_appendix(appendix_csv)
    table = accuracy_table(read_runs(runs_csv), appendix)
    files.write_text(csv_out, table.to_csv(index=False))
    text = markdown_table(table) if len(table) else "No accuracy runs in this config (tasks: [accuracy])."
    for metric, heading in SEED_003_LAYOUT.items():
        wide = seed003_layout(appendix, metric, hardware)
        if len(wide):
            text += f"\n\n## {heading}, in seed 003's layout (mean over repetitions)\n\n" + markdown_table(wide)
    files.write_text(md_out, f"# Accuracy and time to accuracy ({CELL_WORDS})\n\n" + text + "\n")
