"""Run records -> tidy table -> Appendix-A-style table (mean ± sd over repetitions).

Aggregation only reads records; it never writes beside them.
"""
from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from .metrics import FLAGS, METRICS, UNSTEADY
from .record import load_records
from .registry import REGISTRY as FRAMEWORKS
from .spec import PRECISIONS, gpu_count, parse_device, parse_variant, variant_label
from .tasks import TASKS

RUN_KEYS = ["framework", "dataset", "data_mode", "network", "device", "variant", "task", "repetition"]
CELL_KEYS = ["dataset", "network", "framework", "device", "variant", "task"]


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if text and text.strip() else ""


def runs_table(records: list[dict]) -> pd.DataFrame:
    """One row per run: its identity, status, every metric, and why a metric is missing."""
    rows = []
    for record in records:
        run = record["run"]
        row = {key: run[key] for key in RUN_KEYS if key != "variant"}
        row["variant"] = variant_label(run["precision"], run["compile"])
        row.update(status=record["status"], reason=first_line(record["reason"]),
                   framework_version=run.get("framework_version"), batch_size_global=run["batch_size_global"],
                   iterations=run["iterations"], warmup_iterations=run["warmup_iterations"],
                   threads=run["threads"], final_loss=record["quality"]["final_loss"],
                   epochs=run.get("epochs"), target_accuracy=run.get("target_accuracy"),
                   input_size=run.get("input_size"),
                   contention_share=record["timing"]["contention_share"],
                   cpu_model=record["provenance"].get("cpu_model"),
                   gpu_model=", ".join(sorted({gpu["name"] for gpu in record["provenance"].get("gpus") or []})),
                   started_at=record["provenance"].get("started_at"), record=record["path"])
        for metric, spec in METRICS.items():
            block = (record.get(spec.section) or {}) if run["task"] in spec.tasks else {}
            row[metric] = block.get(spec.field)
            reason = block.get("reasons", {}).get(spec.field, "")
            row[f"{metric}_reason"] = first_line(reason) if row[metric] is None else ""
        row.update(flags(row))
        rows.append(row)
    columns = RUN_KEYS + ["status", "reason"]
    return pd.DataFrame(rows, columns=columns + [c for r in rows[:1] for c in r if c not in columns])


def flags(row: dict) -> dict:
    """A run's flags: whether its share exceeds each flag's threshold (a share not measured: no flag)."""
    return {name: row[flag.column] is not None and not pd.isna(row[flag.column]) and row[flag.column] > flag.above
            for name, flag in FLAGS.items()}


def flag_text(group: pd.DataFrame, metric: str) -> str:
    """The cell's marks on ``metric``, ``input-bound 2/3, contended 1/3``: how many of its ok runs carry each flag
    that bears on it."""
    ok = group[group["status"] == "ok"]
    marks = [f"{flag.words} {int(ok[name].astype(bool).sum())}/{len(ok)}" for name, flag in FLAGS.items()
             if (not flag.metrics or metric in flag.metrics) and len(ok) and ok[name].astype(bool).any()]
    return ", ".join(marks)


def measured(runs: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The runs whose value of ``metric`` counts: finished ``ok`` and measured. A failed run's partial
    readings (its memory until it crashed, say) stay in runs.csv but never enter a mean, a spread or a bar."""
    return runs[(runs["status"] == "ok") & runs[metric].notna()]


def appendix(runs: pd.DataFrame) -> pd.DataFrame:
    """Long table: metric × dataset × network × framework × device, mean, sd, n (the ok runs that
    measured it), and the cell text."""
    out = []
    for metric, spec in METRICS.items():
        for cell, group in runs[runs["task"].isin(spec.tasks)].groupby(CELL_KEYS, sort=True):
            values = measured(group, metric)[metric].astype(float)
            row = dict(zip(CELL_KEYS, cell), metric=metric, unit=spec.unit, n=len(values), runs=len(group))
            if len(values):
                row["mean"], row["sd"] = values.mean(), values.std(ddof=1) if len(values) > 1 else float("nan")
                row["cv"] = row["sd"] / abs(row["mean"]) if row["mean"] else float("nan")
                unsteady = f"cv > {UNSTEADY:.0%}" if spec.steady and row["cv"] > UNSTEADY else ""
                flagged = flag_text(group, metric) if spec.flagged else ""
                row["flags"] = ", ".join(mark for mark in (flagged, unsteady) if mark)
                row["cell"] = _format(row["mean"], row["sd"], row["cv"], len(values), group) + (
                    f" [{row['flags']}]" if row["flags"] else "")
            else:
                row["mean"] = row["sd"] = row["cv"] = float("nan")
                row["flags"], row["cell"] = "", _why_missing(group, metric)
            out.append(row)
    return pd.DataFrame(out, columns=["metric", "unit", *CELL_KEYS, "n", "runs", "mean", "sd", "cv", "cell", "flags"])


def decimals(value: float) -> int:
    """Decimals a reader needs: none from 100 up, three below 1."""
    return 0 if abs(value) >= 100 else 2 if abs(value) >= 1 else 3


def ratio_words(ratios: pd.Series) -> list[str]:
    """Ratios as a table prints them: ``×1.23``, a dash where there is none."""
    return ["—" if pd.isna(value) else f"×{value:.3g}" for value in ratios]


def _format(mean: float, sd: float, cv: float, n: int, group: pd.DataFrame) -> str:
    """``1,234 ± 56 (n=3, cv 4.5%)``: the number of runs always, of how many where some did not count."""
    digits = decimals(mean)
    spread = "" if pd.isna(sd) else f" ± {sd:,.{digits}f}"
    others = group["status"][group["status"] != "ok"].value_counts()
    not_counted = "".join(f", {count} {status}" for status, count in sorted(others.items()))
    missing = "" if n == len(group) else f" of {len(group)}{not_counted}"
    variation = "" if pd.isna(cv) else f", cv {cv:.1%}"
    return f"{mean:,.{digits}f}{spread} (n={n}{missing}{variation})"


def _why_missing(group: pd.DataFrame, metric: str) -> str:
    """Why a cell has no value: the ok runs' own reason for the metric, which they could not measure
    (a CPU run has no GPU power), else every distinct status and reason of its runs (all failed or
    unavailable), with how many runs each where they differ."""
    ok = group[group["status"] == "ok"]
    if len(ok):
        reasons = ok[f"{metric}_reason"].replace("", pd.NA).dropna()
        return f"unavailable: {reasons.iloc[0] if len(reasons) else 'not recorded'}"
    distinct = group.groupby(["status", "reason"], sort=False).size()
    if len(distinct) == 1:
        (status, reason), = distinct.index
        return f"{status}: {reason}"
    return "; ".join(f"{status}: {reason} ({runs} of {len(group)})" for (status, reason), runs in distinct.items())


def settings(table: pd.DataFrame) -> pd.Series:
    """Each row's device, its variant where the table has another than plain fp32, and its task unless it
    trains: the columns of the appendix and the bars of a figure, so that a cell's
    variants and tasks stand side by side."""
    setting = table["device"]
    if set(table["variant"]) != {"fp32"}:
        setting = setting + " " + table["variant"]
    return setting + table["task"].map(lambda task: "" if task == "train" else f" {task}")


def setting_order(table: pd.DataFrame) -> list[str]:
    """The settings of ``table`` by device, then precision (as spec.PRECISIONS lists them), eager first,
    then task (as tasks.TASKS lists them)."""
    def key(row) -> tuple:
        precision, compiled = parse_variant(row.variant)
        return row.device, list(PRECISIONS).index(precision), compiled, list(TASKS).index(row.task)
    rows = table[["device", "variant", "task"]].drop_duplicates().assign(setting=lambda t: settings(t))
    return [row.setting for row in sorted(rows.itertuples(), key=key)]


def scale(device: str) -> tuple[str, int]:
    """The one-device run a device's speed is set against, and how many devices it has: ``gpu2`` -> (gpu1, 2),
    ``2xgpu1`` -> (gpu1, 2), ``2xcpu`` -> (cpu, 2), ``cpu`` -> (cpu, 1)."""
    processes, _ = parse_device(device)
    gpus = gpu_count(device)
    return ("gpu1", gpus) if gpus else ("cpu", processes)


def scaling(table: pd.DataFrame) -> pd.DataFrame:
    """From the appendix's long table, each training cell on several devices against the same framework's cell
    on one (the thesis's 2 GPUs ÷ 1 GPU): the speed-up and the efficiency (speed-up ÷ devices)."""
    speed = table[(table["metric"] == "train_speed") & (table["task"] == "train") & (table["n"] > 0)]
    one = speed.set_index(["dataset", "network", "framework", "variant", "device"])["mean"]
    rows = []
    for cell in speed.itertuples():
        baseline, devices = scale(cell.device)
        base = one.get((cell.dataset, cell.network, cell.framework, cell.variant, baseline))
        if devices > 1 and base is not None:
            rows.append({"dataset": cell.dataset, "network": cell.network, "framework": cell.framework,
                         "variant": cell.variant, "device": cell.device, "baseline": baseline, "devices": devices,
                         "speedup": cell.mean / base, "efficiency": cell.mean / base / devices})
    return pd.DataFrame(rows, columns=["dataset", "network", "framework", "variant", "device", "baseline", "devices",
                                       "speedup", "efficiency"])


def appendix_wide(table: pd.DataFrame) -> pd.DataFrame:
    """The thesis's layout: one row per metric/dataset/network/framework, one column per device (and
    variant: precision, compiled)."""
    wide = table.assign(setting=settings(table)).pivot_table(
        index=["metric", "unit", "dataset", "network", "framework"], columns="setting", values="cell",
        aggfunc="first", sort=False)[setting_order(table)]
    wide.columns.name = None
    return wide.reset_index()


def read_runs(runs_csv: Path) -> pd.DataFrame:
    """runs.csv as :func:`runs_table` made it: an empty reason is no reason, an empty number is missing.
    A metric that is not a finite number (non-negative unless the metric is signed) is refused, naming the
    file, its line and column: a runs.csv may come from elsewhere (make compare)."""
    raw = pd.read_csv(runs_csv, dtype=str, keep_default_na=False)
    for metric in METRICS.keys() & set(raw.columns):
        given = raw[metric] != ""
        numbers = pd.to_numeric(raw[metric].where(given), errors="coerce")
        wrong = given & ~(numbers.abs() < float("inf")) | ((numbers < 0) & (not METRICS[metric].signed))
        if wrong.any():
            line = wrong.idxmax()
            allowed = "a finite number" + ("" if METRICS[metric].signed else " ≥ 0")
            raise ValueError(f"{runs_csv}, line {line + 2}, {metric}: {raw.at[line, metric]!r} is not a measurement "
                             f"(allowed: {allowed}, or empty where it was not measured)")
    reasons = {c: str for c in raw.columns if c == "reason" or c.endswith("_reason")}
    return pd.read_csv(runs_csv, dtype=reasons, keep_default_na=False,
                       na_values={c: [""] for c in raw.columns if c not in reasons})


HTML_OPENING = re.compile(r"<(?=[A-Za-z/!?])")


def markdown_table(table: pd.DataFrame) -> str:
    """``table`` as Markdown, its text cells escaped: a reason's ``|`` stays in its cell, its HTML is text
    (a ``<`` that could open a tag or a comment is ``&lt;``; "a < b" stays as it is), a line break a space."""
    def escaped(value):
        if not isinstance(value, str):
            return value
        return HTML_OPENING.sub("&lt;", " ".join(value.split("\n"))).replace("|", "\\|")
    return table.map(escaped).rename(columns=escaped).to_markdown(index=False)


def write_appendix(runs_csv: Path, csv_out: Path, md_out: Path, tex_out: Path) -> None:
    table = appendix(read_runs(runs_csv))
    table.to_csv(csv_out, index=False)
    wide = appendix_wide(table)
    md_out.write_text("# Benchmark results (mean ± sd over repetitions)\n\n" + markdown_table(wide) + "\n")
    tex_out.write_text(wide.to_latex(index=False, longtable=True, escape=True,
                                     caption="Benchmark results: mean ± sd over repetitions (n = repetitions).",
                                     label="tab:appendix"))



# The API-cost table's columns, (metric, task): what a higher-level API or runtime costs over the framework
# it runs on (seed 002's question, answered for today), and where a run's time goes beside its loop's
# (seed 001's line profile: import and build, the first step where compilers compile).
API_COST_COLUMNS = (("latency_p50", "inference"), ("latency_p99", "inference"), ("inference_speed", "inference"),
                    ("train_speed", "train"), ("setup_time", "inference"), ("setup_time", "train"),
                    ("first_step_time", "train"))
SETTING_KEYS = ["dataset", "network", "device", "variant"]


def api_cost(table: pd.DataFrame) -> pd.DataFrame:
    """From the appendix's long table: per dataset, network, device and variant, each framework's mean of
    every API_COST_COLUMNS column it measured and, for a framework that runs on another (the registry's
    ``runs_on``: Keras on its backend, ONNX Runtime on PyTorch's export), that mean over the other's."""
    means = table.set_index([*SETTING_KEYS, "framework", "metric", "task"])["mean"]
    order = list(FRAMEWORKS)

    def beside_its_peer(framework: str) -> tuple:  # each native framework, then those that run on it
        peer = FRAMEWORKS[framework].runs_on
        return order.index(peer or framework), peer is not None, order.index(framework)
    rows = []
    for setting, group in table.groupby(SETTING_KEYS, sort=True):
        for framework in sorted(group["framework"].unique(), key=beside_its_peer):
            peer = FRAMEWORKS[framework].runs_on
            row = dict(zip(SETTING_KEYS, setting), framework=framework, runs_on=peer)
            for metric, task in API_COST_COLUMNS:
                mean = means.get((*setting, framework, metric, task), float("nan"))
                row[f"{metric} {task}"] = mean
                row[f"{metric} {task} ratio"] = mean / means.get((*setting, peer, metric, task), float("nan"))
            rows.append(row)
    keys = [*SETTING_KEYS, "framework", "runs_on"]
    out = pd.DataFrame(rows) if rows else pd.DataFrame(columns=keys)
    unmeasured = [column for column in out.columns if column not in keys and out[column].isna().all()]
    return out.drop(columns=unmeasured)


def api_cost_markdown(cost: pd.DataFrame) -> str:
    """The API-cost table for a reader: one row per framework, each value with its ratio (×) where it has one."""
    columns = [f"{metric} {task}" for metric, task in API_COST_COLUMNS if f"{metric} {task}" in cost]
    shown = cost[[*SETTING_KEYS, "framework", "runs_on"]].fillna({"runs_on": "—"})
    for column in columns:
        metric = column.split()[0]
        ratios = cost.get(f"{column} ratio", pd.Series(float("nan"), index=cost.index))
        shown[f"{column} ({METRICS[metric].unit})"] = [
            "—" if pd.isna(value) else f"{value:,.{decimals(value)}f}" + ("" if pd.isna(ratio) else f" (×{ratio:.2f})")
            for value, ratio in zip(cost[column], ratios)]
    return ("# What an API costs, and where a run's time goes\n\n" + markdown_table(shown) + "\n")


def write_api_cost(appendix_csv: Path, csv_out: Path, md_out: Path) -> None:
    cost = api_cost(pd.read_csv(appendix_csv))
    cost.to_csv(csv_out, index=False)
    md_out.write_text(api_cost_markdown(cost))


# Seed 003's published P100 and K80 results, set beside the accuracy runs of its cases
SEED_003 = Path(__file__).parents[2] / "resources" / "seed003_published.csv"
SEED_003_CASE = {"epochs": 10, "batch_size_global": 10, "input_size": 224}
ACCURACY_COLUMNS = ("test_accuracy", "time_to_accuracy", "train_speed")


def accuracy_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per accuracy cell: its epochs, batch and target, the appendix's cells of its accuracy, time to
    accuracy and training speed, what its data means, and seed 003's published figures where the dataset
    (real), network and epochs are the seed's."""
    runs = runs[runs["task"] == "accuracy"]
    keys = ["dataset", "network", "framework", "device", "variant"]
    columns = [*keys, "data_mode", "epochs", "batch_size_global", "target_accuracy",
               *ACCURACY_COLUMNS, "data", "seed 003 P100", "seed 003 K80", "differs from seed 003"]
    if not len(runs):
        return pd.DataFrame(columns=columns)
    cells = appendix(runs).pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    published = pd.read_csv(SEED_003, comment="#")
    rows = []
    for key, group in runs.groupby(keys, sort=True):
        first = group.iloc[0]
        row = dict(zip(keys, key), data_mode=first["data_mode"], epochs=first["epochs"],
                   batch_size_global=first["batch_size_global"], target_accuracy=first["target_accuracy"],
                   **{metric: cells.loc[key].get(metric, "") for metric in ACCURACY_COLUMNS})
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
    return pd.DataFrame(rows, columns=columns).fillna({"seed 003 P100": "", "seed 003 K80": "",
                                                       "differs from seed 003": ""})


def write_accuracy(runs_csv: Path, csv_out: Path, md_out: Path) -> None:
    table = accuracy_table(read_runs(runs_csv))
    table.to_csv(csv_out, index=False)
    text = markdown_table(table) if len(table) else "No accuracy runs in this config (tasks: [accuracy])."
    md_out.write_text("# Accuracy and time to accuracy (mean ± sd over repetitions)\n\n" + text + "\n")


TOP_LAYERS = 5  # the layers table's most expensive layers per cell


def layer_means(records: list[dict]) -> pd.DataFrame:
    """Per profile cell (dataset, network, framework, device, variant) and layer, in walk order: the mean over
    its ok runs of each layer's forward and backward milliseconds, and of the profiled step's."""
    rows = []
    for record in records:
        run, profile = record["run"], record.get("profile") or {}
        if run["task"] != "profile" or record["status"] != "ok" or not profile.get("layers"):
            continue
        cell = {"dataset": run["dataset"], "network": run["network"], "framework": run["framework"],
                "device": run["device"], "variant": variant_label(run["precision"], run["compile"])}
        rows += [{**cell, "order": order, "layer": layer["name"], "forward_ms": layer["forward_ms"],
                  "backward_ms": layer["backward_ms"], "iteration_ms": profile["iteration_ms"],
                  "repetition": run["repetition"]} for order, layer in enumerate(profile["layers"])]
    columns = ["dataset", "network", "framework", "device", "variant", "order", "layer"]
    if not rows:
        return pd.DataFrame(columns=[*columns, "forward_ms", "backward_ms", "iteration_ms", "runs"])
    table = pd.DataFrame(rows).groupby(columns, sort=True).agg(
        forward_ms=("forward_ms", "mean"), backward_ms=("backward_ms", "mean"), iteration_ms=("iteration_ms", "mean"),
        runs=("repetition", "nunique")).reset_index()
    return table.sort_values(columns[:6]).reset_index(drop=True)


def layers_table(records: list[dict], runs: pd.DataFrame) -> pd.DataFrame:
    """One row per profile cell: the appendix's cells of its profiler overhead and unaccounted share, and its
    most expensive layers (forward + backward, mean over its ok runs), so that the same layer can be read
    across frameworks."""
    keys = ["dataset", "network", "framework", "device", "variant"]
    runs = runs[runs["task"] == "profile"]
    columns = [*keys, "profiling_overhead", "unaccounted_share", *[f"layer {k}" for k in range(1, TOP_LAYERS + 1)]]
    if not len(runs):
        return pd.DataFrame(columns=columns)
    cells = appendix(runs).pivot_table(index=keys, columns="metric", values="cell", aggfunc="first")
    means = layer_means(records).assign(total_ms=lambda t: t["forward_ms"] + t["backward_ms"])
    rows = []
    for key in cells.index:
        row = dict(zip(keys, key), **{metric: cells.loc[key].get(metric, "") for metric in
                                      ("profiling_overhead", "unaccounted_share")})
        layers = means[(means[keys] == pd.Series(dict(zip(keys, key)))).all(axis=1)].nlargest(TOP_LAYERS, "total_ms")
        for rank, layer in enumerate(layers.itertuples(), 1):
            row[f"layer {rank}"] = (f"{layer.layer} {layer.total_ms:,.{decimals(layer.total_ms)}f} ms "
                                    f"({layer.forward_ms:,.{decimals(layer.forward_ms)}f} + "
                                    f"{layer.backward_ms:,.{decimals(layer.backward_ms)}f})")
        rows.append(row)
    return pd.DataFrame(rows, columns=columns).fillna("")


def write_layers(record_paths: list[Path], runs_csv: Path, csv_out: Path, md_out: Path) -> None:
    table = layers_table(load_records(record_paths), read_runs(runs_csv))
    table.to_csv(csv_out, index=False)
    text = markdown_table(table) if len(table) else "No profile runs in this config (tasks: [profile])."
    md_out.write_text("# Where a training step's time goes, layer by layer\n\n" + text + "\n")
