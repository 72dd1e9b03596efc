"""Run records -> tidy table -> Appendix-A-style table (mean ± sd over repetitions).

Aggregation only reads records; it never writes beside them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import compute
from .spec import PRECISIONS, SETUP_FIELDS, RunSpec, parse_variant, variant_label


@dataclass(frozen=True)
class Metric:
    section: str  # of the run record
    field: str
    unit: str
    meaning: str  # for figure captions: what the number is and where it comes from


@dataclass(frozen=True)
class Flag:
    words: str  # in the appendix's cells and on the figures' bars
    column: str  # of runs.csv
    above: float  # the share above which a run carries the flag


# The marks of runs whose speed says less about the framework than about its surroundings: they waited
# for their input, or other work shared their cores (dlbench.host).
FLAGS = {"input_bound": Flag("input-bound", "input_wait", 0.05),
         "contended": Flag("contended", "contention_share", 0.10)}


# The one place a metric is added; the thesis's three first.
METRICS = {
    "train_speed": Metric("timing", "images_per_second_mean", "images/s",
                          "images per second over the timed iterations (warm-up excluded), with the global batch, "
                          "from the training loop's own clock: each interval runs from one step's completion to "
                          "the next"),
    "gpu_memory": Metric("memory", "gpu_process_peak_mib", "MiB",
                         "peak GPU memory of the run's processes, as NVML reports it, sampled through the run"),
    "gpu_power": Metric("power", "gpu_mean_w", "W",
                        "mean power of the run's GPUs over the timed iterations, from NVML (its energy counter "
                        "where the GPU has one, else integrated power samples)"),
    "gpu_energy_per_image": Metric("power", "energy_per_image_j", "J/image",
                                   "GPU energy over the timed iterations divided by the images trained in them"),
    "host_memory": Metric("memory", "host_peak_rss_mib", "MiB",
                          "peak resident memory of the run's process tree (the runner, its input-pipeline workers), "
                          "sampled through the run"),
    "cpu_per_wall": Metric("timing", "cpu_per_wall", "CPU s / wall s",
                           "CPU time of the training process over the timed iterations divided by their wall time: "
                           "how many cores it kept busy"),
    "setup_time": Metric("timing", "setup_seconds", "s",
                         "seconds from the runner's launch to its first step: the interpreter's start, the "
                         "framework's import, the model and input pipeline built (each in the record)"),
    "first_step_time": Metric("timing", "first_step_seconds", "s",
                              "seconds of the first training step, where compilers compile (torch.compile, XLA) and "
                              "cuDNN autotunes; the timed iterations exclude it"),
    "achieved_tflops": Metric("compute", "achieved_tflops", "TFLOP/s",
                              "training FLOPs per image (forward and backward, counted from the network's "
                              "description as torch.utils.flop_counter counts them) times images per second"),
    "input_wait": Metric("timing", "input_wait_share", "share of timed time",
                         "the share of the timed iterations' time the training loop waited for its next batch "
                         f"(runs above {FLAGS['input_bound'].above:.0%} are marked input-bound)"),
    "cpu_energy_per_image": Metric("power", "cpu_energy_per_image_j", "J/image",
                                   "CPU package and DRAM energy (RAPL) over the timed iterations divided by the "
                                   "images trained in them; the whole package's, other processes' work included"),
    "mfu": Metric("compute", "mfu", "fraction of ceiling",
                  "model FLOPs utilisation: achieved TFLOP/s over the ceiling of the run's devices, the rate "
                  "a large matrix product reached on this node in the run's precision (measured once per node)"),
}
RUN_KEYS = ["framework", "dataset", "data_mode", "network", "device", "variant", "repetition"]
CELL_KEYS = ["dataset", "network", "framework", "device", "variant"]


def load_records(paths) -> list[dict]:
    records = []
    for path in paths:
        record = upgrade(json.loads(Path(path).read_text()))
        record["path"] = str(path)
        records.append(record)
    return records


def upgrade(record: dict) -> dict:
    """A record of an older schema in today's form, so that records kept from an earlier version
    aggregate beside new ones (CHANGELOG.md says what each schema changed)."""
    if record["schema"] == 1:  # its reasons began with "unavailable: "; today the status is only data
        def words(reason: str) -> str:
            return reason.removeprefix("unavailable: ")
        record["reason"] = words(record["reason"])
        for section in ("timing", "memory", "power", "quality"):
            reasons = record[section].get("reasons", {})
            reasons.update({field: words(reason) for field, reason in reasons.items()})
        record["run"]["compile"] = False  # the precision axis and the compile axis came with schema 2
        record["execution"] = None  # unknown: each framework used its own default math
        record["schema"] = 2
    if record["schema"] == 2:  # schema 3 timed the set-up before the first step
        record["timing"].update(dict.fromkeys(SETUP_FIELDS))
        record["timing"].setdefault("reasons", {}).update(
            dict.fromkeys(SETUP_FIELDS, "not measured before record schema 3"))
        record["schema"] = 3
    if record["schema"] == 3:  # schema 4 counted FLOPs: the achieved rate follows from the measured speed
        spec = RunSpec(**{key: value for key, value in record["run"].items() if key in RunSpec.__dataclass_fields__})
        ok = record["status"] == "ok"
        record["compute"] = compute.block(spec, record["timing"]["images_per_second_mean"] if ok else None, None,
                                          "", [], None if ok else f"see the run's reason ({record['status']})",
                                          no_ceiling="no ceiling was measured before record schema 4")
        before = "not measured before record schema 4"
        for section, fields in (("timing", ("input_wait_seconds", "input_wait_share", "contention_share")),
                                ("power", ("cpu_energy_per_image_j",))):
            record[section].update(dict.fromkeys(fields))
            record[section].setdefault("reasons", {}).update(dict.fromkeys(fields, before))
        record["schema"] = 4
    return record


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if text and text.strip() else ""


def runs_table(records: list[dict]) -> pd.DataFrame:
    """One row per run: its identity, status, every metric, and why a metric is missing."""
    rows = []
    for record in records:
        run = record["run"]
        row = {key: run[key] for key in RUN_KEYS if key != "variant"}
        row["variant"] = variant_label(run["precision"], run["compile"])
        row.update(status=record["status"], reason=_first_line(record["reason"]),
                   framework_version=run.get("framework_version"), batch_size_global=run["batch_size_global"],
                   iterations=run["iterations"], warmup_iterations=run["warmup_iterations"],
                   threads=run["threads"], final_loss=record["quality"]["final_loss"],
                   contention_share=record["timing"]["contention_share"],
                   started_at=record["provenance"].get("started_at"), record=record["path"])
        for metric, spec in METRICS.items():
            block = record[spec.section]
            row[metric] = block.get(spec.field)
            reason = block.get("reasons", {}).get(spec.field, "")
            row[f"{metric}_reason"] = _first_line(reason) if row[metric] is None else ""
        row.update(flags(row))
        rows.append(row)
    columns = RUN_KEYS + ["status", "reason"]
    return pd.DataFrame(rows, columns=columns + [c for r in rows[:1] for c in r if c not in columns])


def flags(row: dict) -> dict:
    """A run's flags: whether its share exceeds each flag's threshold (a share not measured: no flag)."""
    return {name: row[flag.column] is not None and not pd.isna(row[flag.column]) and row[flag.column] > flag.above
            for name, flag in FLAGS.items()}


def flag_text(group: pd.DataFrame) -> str:
    """The cell's marks, ``input-bound 2/3, contended 1/3``: how many of its ok runs carry each flag."""
    ok = group[group["status"] == "ok"]
    marks = [f"{flag.words} {int(ok[name].astype(bool).sum())}/{len(ok)}" for name, flag in FLAGS.items()
             if len(ok) and ok[name].astype(bool).any()]
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
        for cell, group in runs.groupby(CELL_KEYS, sort=True):
            values = measured(group, metric)[metric].astype(float)
            row = dict(zip(CELL_KEYS, cell), metric=metric, unit=spec.unit, n=len(values), runs=len(group),
                       flags=flag_text(group))
            if len(values):
                row["mean"], row["sd"] = values.mean(), values.std(ddof=1) if len(values) > 1 else float("nan")
                row["cell"] = _format(row["mean"], row["sd"], len(values), group) + (
                    f" [{row['flags']}]" if row["flags"] else "")
            else:
                row["mean"] = row["sd"] = float("nan")
                row["cell"] = _why_missing(group, metric)
            out.append(row)
    return pd.DataFrame(out, columns=["metric", "unit", *CELL_KEYS, "n", "runs", "mean", "sd", "cell", "flags"])


def _format(mean: float, sd: float, n: int, group: pd.DataFrame) -> str:
    digits = 0 if abs(mean) >= 100 else 2 if abs(mean) >= 1 else 3
    spread = "" if pd.isna(sd) else f" ± {sd:,.{digits}f}"
    others = group["status"][group["status"] != "ok"].value_counts()
    not_counted = "".join(f", {count} {status}" for status, count in sorted(others.items()))
    missing = "" if n == len(group) else f" of {len(group)}{not_counted}"
    return f"{mean:,.{digits}f}{spread} (n={n}{missing})"


def _why_missing(group: pd.DataFrame, metric: str) -> str:
    """Why a cell has no value: the ok runs' own reason for the metric, which they could not measure
    (a CPU run has no GPU power), else the first run's status and reason (all failed or unavailable)."""
    ok = group[group["status"] == "ok"]
    if len(ok):
        reasons = ok[f"{metric}_reason"].replace("", pd.NA).dropna()
        return f"unavailable: {reasons.iloc[0] if len(reasons) else 'not recorded'}"
    first = group.iloc[0]
    return f"{first['status']}: {first['reason']}"


def settings(table: pd.DataFrame) -> pd.Series:
    """Each row's device, and its variant where the table has another than plain fp32: the columns
    of the appendix and the bars of a figure, so that a cell's variants stand side by side."""
    if set(table["variant"]) == {"fp32"}:
        return table["device"]
    return table["device"] + " " + table["variant"]


def setting_order(table: pd.DataFrame) -> list[str]:
    """The settings of ``table`` by device, then precision (as spec.PRECISIONS lists them), eager first."""
    def key(row) -> tuple:
        precision, compiled = parse_variant(row.variant)
        return row.device, list(PRECISIONS).index(precision), compiled
    rows = table[["device", "variant"]].drop_duplicates().assign(setting=lambda t: settings(t))
    return [row.setting for row in sorted(rows.itertuples(), key=key)]


def appendix_wide(table: pd.DataFrame) -> pd.DataFrame:
    """The thesis's layout: one row per metric/dataset/network/framework, one column per device (and
    variant: precision, compiled)."""
    wide = table.assign(setting=settings(table)).pivot_table(
        index=["metric", "unit", "dataset", "network", "framework"], columns="setting", values="cell",
        aggfunc="first", sort=False)[setting_order(table)]
    wide.columns.name = None
    return wide.reset_index()


def write_appendix(runs_csv: Path, csv_out: Path, md_out: Path, tex_out: Path) -> None:
    columns = pd.read_csv(runs_csv, nrows=0).columns
    reasons = {c: str for c in columns if c == "reason" or c.endswith("_reason")}  # empty = no reason
    table = appendix(pd.read_csv(runs_csv, dtype=reasons, keep_default_na=False, na_values={
        c: [""] for c in columns if c not in reasons}))
    table.to_csv(csv_out, index=False)
    wide = appendix_wide(table)
    md_out.write_text("# Benchmark results (mean ± sd over repetitions)\n\n" + wide.to_markdown(index=False) + "\n")
    tex_out.write_text(wide.to_latex(index=False, longtable=True, escape=True,
                                     caption="Benchmark results: mean ± sd over repetitions (n = repetitions).",
                                     label="tab:appendix"))

