"""Several results directories as one result set (config ``merge``): the runs of workflow runs on machines
that could not share one (a laptop's and a GPU node's; two clusters), read where they lie, never copied or
rewritten, for one runs table, appendix, figures and report.

Two directories may not call one hardware target by one name for two machines: their runs would stand in one
column under a name that means two things. Nor may they hold the same run twice (its path and its machine):
a merged cell takes each run once.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import fields
from pathlib import Path

from ..config import Case
from ..files import Unreadable
from ..record.io import read_record
from ..record.provenance import machine
from ..spec import gpu_count
from .runs import hardware


class MergeError(ValueError):
    pass


def runs_dir(results: Path) -> Path:
    """A results directory's ``runs/``: given the results directory itself or the workflow directory above it."""
    for candidate in (results / "runs", results / "results" / "runs"):
        if candidate.is_dir():
            return candidate
    raise MergeError(f"merge: {results} holds no runs (neither {results}/runs nor {results}/results/runs)")


def merged_records(directories: list[str], log=print) -> dict[Path, dict]:
    """Every run record under the directories' ``runs/``, by path (resolved), each read and checked as the
    tables read it (a damaged one is left out and named through ``log``); :class:`MergeError` where two
    directories name one target for two machines, or hold one run twice."""
    if len({Path(d).resolve() for d in directories}) < len(directories):
        raise MergeError(f"merge: a directory is listed twice ({', '.join(directories)})")
    found: dict[Path, dict] = {}
    identities: dict[tuple[str, str], dict[str, set]] = defaultdict(lambda: defaultdict(set))
    seen: dict[tuple[Path, str | None], Path] = {}
    for directory in directories:
        root = runs_dir(Path(directory))
        paths = sorted(root.rglob("rep*.json"))
        if not paths:
            raise MergeError(f"merge: {root} holds no run records (rep*.json)")
        for path in paths:
            try:
                record = read_record(path)
            except Unreadable as error:
                log(f"merge: left out: {error}")
                continue
            run, named = record["run"], machine(record)
            same = seen.setdefault((path.relative_to(root), named), path)
            if same != path:
                on = named or "a machine it does not name"
                raise MergeError(f"merge: {same} and {path} are one run twice (the same run on {on}); a merged "
                                 "cell takes each run once: set one aside, or set the two side by side with "
                                 "make compare")
            if hardware(run) and named:
                processor = "gpu" if gpu_count(run["device"]) else "cpu"
                identities[(hardware(run), processor)][directory].add(named)
            found[path.resolve()] = record
    for (target, processor), by_directory in identities.items():
        if len(by_directory) > 1 and len({frozenset(machines) for machines in by_directory.values()}) > 1:
            seen_as = "; ".join(f"{d}: {', '.join(sorted(m))}" for d, m in by_directory.items())
            raise MergeError(f"merge: hardware target {target!r} is two machines ({processor} runs: {seen_as}); "
                             "one column, one machine: name them apart (hardware[].name) before merging")
    return found


def case_of(record: dict) -> Case:
    """The case a record's run was a repetition of, as its config had it."""
    run = record["run"]
    return Case(**{f.name: run[f.name] for f in fields(Case) if f.name in run})
