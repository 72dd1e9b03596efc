"""Whether a run's record is current: what it measured is what the config and the code ask now, decided from the
record itself (its spec and the fingerprints of what ran it), not only from Snakemake's metadata, which is a cache.

A record's fingerprints are the SHA-256 of its network's description (as the builders read it), of its framework's
backend module with the backend modules it imports (and, for a framework in a worker, its worker's script and the
worker protocol), and of its task's module with the task modules it imports. A README or another framework's backend
changes none of them; LeNet's description changes LeNet's records' in every framework; ``backends/mxnet.py`` changes
MXNet's.

Snakemake sees currency through a stamp per record (:func:`stamp_path`), an input of the run:
written when the expected spec or fingerprints change, and dated after the record where the record is not current
(Snakemake reruns an output older than its input), before it where it is.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from .. import datasets
from ..paths import PACKAGE_ROOT
from ..registry import REGISTRY
from ..spec import RunSpec

PACKAGE = PACKAGE_ROOT / "dlbench"
WORKERS = PACKAGE_ROOT / "workers"
WORKER_PROTOCOL = "worker_protocol.py"
STAMPS = "results/.current"
UNCOMPARED = {"framework_version"}  # measured by the run, not asked by the config


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@functools.cache
def _sources(module: Path) -> tuple[Path, ...]:
    """The module and the modules of its own package it imports (``from . import x``, ``from .x import y``)."""
    found = [module]
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names = [node.module] if node.module else [alias.name for alias in node.names]
            found += [module.parent / f"{name.split('.')[0]}.py" for name in names]
    return tuple(dict.fromkeys(path for path in found if path.exists()))


@functools.cache
def _code_fingerprint(module: Path, *more: Path) -> str:
    return _sha256(b"".join(path.read_bytes() for path in (*_sources(module), *more)))


def fingerprints(spec: RunSpec) -> dict[str, str]:
    """What ran the run, as fingerprints: its network's description, its backend's code, its task's code."""
    description = datasets.description(spec.network, spec.family, spec.input_size, spec.classes)
    framework = REGISTRY[spec.framework]
    worker = (WORKERS / framework.worker, WORKERS / WORKER_PROTOCOL) if framework.worker else ()
    return {"network": _sha256(repr(description).encode()),
            "backend": _code_fingerprint(PACKAGE / "backends" / f"{framework.module}.py", *worker),
            "task": _code_fingerprint(PACKAGE / "tasks" / f"{spec.task}.py")}


def expected(spec: RunSpec) -> dict:
    """What a current record of ``spec`` holds: its run block (but what the run measures) and its fingerprints."""
    run = {key: value for key, value in spec.record_block(None).items() if key not in UNCOMPARED}
    return {"run": run, "fingerprints": fingerprints(spec)}


DEFAULTS = {field.name: field.default for field in dataclasses.fields(RunSpec)
            if field.default is not dataclasses.MISSING}


def staleness(record: dict, asked: dict) -> str | None:
    """Why ``record`` is not what ``asked`` (:func:`expected`) asks; None where it is. A setting a record of an
    older dlbench leaves out counts as its default."""
    run = record.get("run") or {}
    differs = [f"{key} {run.get(key, DEFAULTS.get(key))!r} (now {value!r})" for key, value in asked["run"].items()
               if run.get(key, DEFAULTS.get(key)) != value]
    held = (record.get("provenance") or {}).get("fingerprints") or {}
    differs += [f"its {what}'s code or description changed" if held.get(what) else f"no {what} fingerprint"
                for what, value in asked["fingerprints"].items() if held.get(what) != value]
    return "; ".join(differs) or None


def stamp_path(record_path: Path) -> Path:
    """``results/.current/<the record's path without .json>/stamp.json``: a directory per record, because the main
    process writes a stamp while Snakemake builds its DAG, and Snakemake takes a directory it has listed once for
    all that is in it (its inventory): a stamp beside another record's, written after that one's was checked, was
    missing to it (two records named on the command line)."""
    return Path(STAMPS) / Path(record_path).relative_to("results").with_suffix("") / "stamp.json"


def stamp(record_path: Path, spec: RunSpec, log=print) -> Path:
    """The record's stamp (see the module's text), written where the expected spec changed or the record is not
    current; its date set so that Snakemake reruns the record exactly when it is not current."""
    record_path, path = Path(record_path), stamp_path(record_path)
    asked = expected(spec)
    text = json.dumps(asked, sort_keys=True, indent=1)
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError):
        record = None  # none yet, or damaged: the run makes it (again) whatever its stamp's date
    why = staleness(record, asked) if isinstance(record, dict) else None
    unchanged = path.exists() and path.read_text() == text
    if unchanged and not why:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if record is not None and not why:  # current: the stamp predates it, as if written before the run
        recorded = record_path.stat().st_mtime_ns
        os.utime(path, ns=(recorded - 10**9, recorded - 10**9))
    elif why:
        log(f"dlbench: {record_path} is not current ({why}): it runs again")
    return path
