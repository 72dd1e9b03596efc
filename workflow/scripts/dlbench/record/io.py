"""A record written (atomically) and read back: checked against the schema (numbers finite, in range, the run its
path names), a record of an older schema upgraded to today's; where a record's series lie."""
from __future__ import annotations

import datetime
import functools
import json
import math
import re
from pathlib import Path

import jsonschema
import yaml
from jsonschema.exceptions import best_match

from .. import files
from ..hardware.peaks import Peak
from ..paths import PACKAGE_ROOT
from ..spec import SETUP_FIELDS, RunSpec, gpu_count, placement_label, run_variant
from . import compute
from .currency import judged_stale
from .provenance import machine

SCHEMA_VERSION = 6


SERIES_SUFFIX = ".series.json.gz"


def series_path(record_path: Path) -> Path:
    """Where a run's series lie: beside its record (``rep1.json`` -> ``rep1.series.json.gz``)."""
    record_path = Path(record_path)
    return record_path.with_name(record_path.name.removesuffix(".json") + SERIES_SUFFIX)


def write_record(record: dict, path: Path) -> None:
    """Write atomically, so a killed job never leaves half a record behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_json(path, record, indent=1)


RECORD_SCHEMA = PACKAGE_ROOT.parent / "schemas" / "run_record.schema.yaml"


@functools.cache
def record_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(yaml.safe_load(RECORD_SCHEMA.read_text()))


def record_schema_version() -> int:
    """The schema today's records have (the monitor writes them: SCHEMA_VERSION)."""
    return record_validator().schema["properties"]["schema"]["const"]


ABSURD = 1e15  # beyond any measured quantity's magnitude (FLOPs per image ~1e10, bytes ~1e12, epoch seconds ~2e9)


def _not_a_number(token: str):
    raise ValueError(f"{token} is not a measurement")


def _measured_number(token: str, kind=float) -> float | int:
    """A number of a record's JSON text (``kind``: float or int, as the parser found it), refused where it cannot be
    a measurement: it overflows to infinity (1e999) or is larger than anything a run measures (1e300)."""
    number = kind(token)
    if not math.isfinite(number):
        raise ValueError(f"{token} is not a measurement (not finite)")
    if abs(number) > ABSURD:
        raise ValueError(f"{token} is not a measurement (beyond ±{ABSURD:.0e})")
    return number


def filed_run(path: Path) -> str | None:
    """The run a record's path names (framework/dataset/network/placement/variant/task/rep<k>, as the workflow files
    it under ``runs/``); None for a path outside that layout."""
    parts = Path(path).parts
    if len(parts) < 8 or parts[-8] != "runs" or not re.fullmatch(r"rep[1-9][0-9]*\.json", parts[-1]):
        return None
    return "/".join([*parts[-7:-1], parts[-1].removesuffix(".json")])


def recorded_run(record: dict) -> str:
    """The run a record says it is, named as :func:`filed_run` names a path's."""
    run = record["run"]
    placement = placement_label(run.get("hardware"), run["device"])
    return "/".join([run["framework"], run["dataset"], run["network"], placement, run_variant(run), run["task"],
                     f"rep{run['repetition']}"])


def read_record(path: Path) -> dict:
    """A run's record in today's form (:func:`upgrade`), checked against the record's schema: its numbers
    finite, in range. :class:`files.Unreadable` naming the file where it is damaged, incomplete or of a
    schema newer than this code's."""
    try:
        record = json.loads(Path(path).read_text(), parse_constant=_not_a_number, parse_float=_measured_number,
                            parse_int=functools.partial(_measured_number, kind=int))
    except (OSError, ValueError) as error:
        raise files.Unreadable(f"{path}: {type(error).__name__}: {error}") from None
    schema, newest = record.get("schema") if isinstance(record, dict) else None, record_schema_version()
    if type(schema) is not int or not 1 <= schema <= newest:  # True is an int to isinstance
        raise files.Unreadable(f"{path}: record schema {schema!r} is not one this dlbench reads (1 to {newest}); "
                               "a newer dlbench wrote it?")
    try:
        record = upgrade(record)
    except (KeyError, TypeError, AttributeError) as error:
        raise files.Unreadable(f"{path}: not a schema-{schema} record ({type(error).__name__}: {error})") from None
    problem = best_match(record_validator().iter_errors(record))
    if problem:
        where = "/".join(map(str, problem.absolute_path)) or "the record"
        raise files.Unreadable(f"{path}: {where}: {problem.message}")
    filed = filed_run(path)
    if filed and filed != (run := recorded_run(record)):
        raise files.Unreadable(f"{path}: its run is {run}, not the {filed} its path names")
    return record


def load_records(paths, log=print) -> list[dict]:
    """The readable records of ``paths`` that are current; each left out is named, with why, through ``log``. A
    record the workflow found not current and did not make again is never averaged with current ones."""
    records = []
    for path in paths:
        try:
            record = read_record(path)
        except files.Unreadable as error:
            log(f"left out: {error}")
            continue
        if why := judged_stale(path):
            log(f"left out: {path} is not current ({why}) and was not run again")
            continue
        record["path"] = str(path)
        records.append(record)
    return one_machine_each(records, log)


def one_machine_each(records: list[dict], log=print) -> list[dict]:
    """Runs of two machines are never mixed: in each results directory, a hardware target's CPU runs, and its GPU
    runs, are of one machine, that of the newest of them (by its start); a run of another machine (a record copied
    in from another machine's results) is left out and named, with how to measure it here or to report it beside
    these. A record that names no machine is not compared, nor are records of two directories (merged ones: there
    :mod:`dlbench.tables.merge` holds each target to one machine)."""
    def group(record: dict) -> tuple:
        path, run = Path(record["path"]), record["run"]
        return (path.parents[7] if filed_run(path) else path.parent, run.get("hardware") or "",
                "GPU" if gpu_count(run["device"]) else "CPU")

    def started(record: dict) -> datetime.datetime:
        return datetime.datetime.fromisoformat(record["provenance"]["started_at"])

    newest: dict[tuple, dict] = {}
    for record in records:
        key = group(record)
        if machine(record) and (key not in newest or started(record) > started(newest[key])):
            newest[key] = record
    kept = []
    for record in records:
        theirs, ours = machine(record), newest.get(group(record))
        if theirs and theirs != machine(ours):
            _, target, kind = group(record)
            runs = f"hardware target {target!r}'s {kind} runs" if target else f"{kind} runs"
            log(f"left out: {record['path']} was measured on {theirs}, and this directory's {runs} on "
                f"{machine(ours)} (the newest, {ours['path']}): runs of two machines are never mixed. To measure "
                f"it on this machine: snakemake --force {record['path']}; to report it beside them, move it into a "
                "results directory of its own and run make report RESULTS=\"results <that directory>\"")
            continue
        kept.append(record)
    return kept


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
        spec = RunSpec.from_record(record["run"])
        ok = record["status"] == "ok"
        record["compute"] = compute.block(spec, record["timing"]["images_per_second_mean"] if ok else None, None,
                                          "", [], None if ok else f"see the run's reason ({record['status']})",
                                          Peak(None, "no peak was looked up before record schema 6"),
                                          no_ceiling="no ceiling was measured before record schema 4")
        before = "not measured before record schema 4"
        for section, fields in (("timing", ("input_wait_seconds", "input_wait_share", "contention_share")),
                                ("power", ("cpu_energy_per_image_j",))):
            record[section].update(dict.fromkeys(fields))
            record[section].setdefault("reasons", {}).update(dict.fromkeys(fields, before))
        record["schema"] = 4
    if record["schema"] == 4:  # schema 5 added inference runs; every run before was a training run
        record["run"]["task"] = "train"
        record["latency"] = None
        record["schema"] = 5
    # schema 6: what was MFU, over the measured ceiling, is ceiling_fraction (a block made above is today's)
    if record["schema"] == 5 and "ceiling_fraction" not in record["compute"]:
        block = record["compute"]
        block["ceiling_fraction"] = block.pop("mfu")
        reasons = block["reasons"]
        if "mfu" in reasons:
            reasons["ceiling_fraction"] = reasons.pop("mfu")
        block.update(peak_tflops=None, mfu=None, ceiling_flag=None)
        reasons.update(dict.fromkeys(("peak_tflops", "mfu"), "no peak was looked up before record schema 6"))
    record["schema"] = 6
    return record
