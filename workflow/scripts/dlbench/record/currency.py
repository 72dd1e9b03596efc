"""Whether a run's record is current: what it measured is what the config and the code ask now, decided from the
record itself (its spec and the fingerprints of what ran it), not only from Snakemake's metadata, which is a cache.

A record's fingerprints are SHA-256 digests of what shaped its numbers:

- ``network``: its network's description, as the builders read it;
- ``backend``: its framework's registry entry and the code of its backend module with every module of the package
  that module imports, transitively (and, for a framework in a worker, its worker's script and the worker protocol);
- ``task``: the code of its task's module, with what it imports;
- ``harness``: the code of the monitor (the job's process: the sampler, the record's arithmetic) and the runner
  (the run's process: the input clock, the timed loop), with what they import.

A record also names the data it read (:func:`data_identity`: its conversion's files, by their digests), so that a
dataset converted again to other files (a changed generated size, a new seed) reruns its runs even where
Snakemake's metadata, which would see it, is lost.

"Code" is each module's syntax tree without its docstrings (:func:`code_of`): a comment or a docstring changes no
fingerprint; any statement does, in any module a run's processes import, lazily or not. A backend and a task are
imported by name (``backends.load``), so another framework's backend or another task is in none of a record's
fingerprints. Two choices, made for the direction that wastes work and never keeps a stale number:
``networks.py`` (the layers' arithmetic, the builders' walk, the FLOP counts, and every network's description) is
followed like any module, so an edit of one network's description reruns every network's records (the ``network``
fingerprint says which changed); the registry counts by the framework's own entry, so that adding a framework
(one entry) reruns none of the others.

Snakemake sees currency through a stamp per record (:func:`stamp_path`), an input of the run: written when the
expected spec or fingerprints change, and dated after the record where the record is not current (Snakemake reruns
an output older than its input), before it where it is. A stale record's stamp also holds why and the digest of the
record it judged, so that its content differs from the stamp the record was made against: Snakemake 9 reruns for a
newer input only where its content changed.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from .. import datasets, files, formats
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


# The modules a run's own processes start from: the monitor in the job's, the runner in the run's
HARNESS = (PACKAGE / "run" / "monitor.py", PACKAGE / "run" / "runner.py")
# Modules a fingerprint counts by the value a record's run takes from them, not by their code (see the module's text)
REGISTRY_MODULE = PACKAGE / "registry.py"


def _package_modules(dotted: str) -> list[Path]:
    """The files of the package that importing ``dlbench.<dotted>`` runs (each package's ``__init__.py`` on the way,
    then the module); none where ``dotted`` is no module or package of it (a function's name, another package)."""
    found, place = [], PACKAGE
    for part in filter(None, dotted.split(".")):
        place = place / part
        present = [path for path in (place / "__init__.py", place.with_suffix(".py")) if path.exists()]
        if not present:
            return []
        found += present
    return found


@functools.cache
def _imports(module: Path) -> tuple[Path, ...]:
    """The package's modules that ``module`` imports, anywhere in it (a function's import too): ``from . import x``,
    ``from ..x import y`` (``y`` where it is a module), ``import dlbench.x``, ``from dlbench.x import y``."""
    inside = module.parent.relative_to(PACKAGE).parts
    found = []
    for node in ast.walk(ast.parse(module.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(inside[:len(inside) - node.level + 1] + ((node.module,) if node.module else ()))
            elif (node.module or "").split(".")[0] == "dlbench":
                base = node.module.removeprefix("dlbench").lstrip(".")
            else:
                continue
            found += _package_modules(base)
            found += [path for alias in node.names for path in _package_modules(f"{base}.{alias.name}")]
        elif isinstance(node, ast.Import):
            found += [path for alias in node.names if alias.name.split(".")[0] == "dlbench"
                      for path in _package_modules(alias.name.removeprefix("dlbench").lstrip("."))]
    return tuple(dict.fromkeys(found))


def closure(*modules: Path) -> list[Path]:
    """``modules`` and every module of the package they import, transitively; the registry's entries count apart."""
    seen: dict[Path, None] = {}
    pending = list(modules)
    while pending:
        module = pending.pop()
        if module in seen or module == REGISTRY_MODULE:
            continue
        seen[module] = None
        pending += _imports(module) if module.is_relative_to(PACKAGE) else ()
    return sorted(seen)


def code_of(module: Path) -> str:
    """The module's syntax tree without its docstrings: what its statements do, not its comments or its text."""
    return _syntax(module.read_text())


@functools.cache  # by the text: a module parsed once for every closure it is in
def _syntax(text: str) -> str:
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            node.body = node.body[1:] or [ast.Pass()]
    return ast.dump(tree)


@functools.cache
def _code_fingerprint(*modules: Path, value: str = "") -> str:
    return _sha256("".join(f"{path.name}\n{code_of(path)}\n" for path in closure(*modules)).encode() + value.encode())


def fingerprints(spec: RunSpec) -> dict[str, str]:
    """What ran the run, as fingerprints (see the module's text): its network's description, its backend's code and
    registry entry, its task's code, the harness's code."""
    description = datasets.description(spec.network, spec.family, spec.input_size, spec.classes)
    framework = REGISTRY[spec.framework]
    worker = (WORKERS / framework.worker, WORKERS / WORKER_PROTOCOL) if framework.worker else ()
    return {"network": _sha256(repr(description).encode()),
            "backend": _code_fingerprint(PACKAGE / "backends" / f"{framework.module}.py", *worker,
                                         value=repr(framework)),
            "task": _code_fingerprint(PACKAGE / "tasks" / f"{spec.task}.py"),
            "harness": _code_fingerprint(*HARNESS)}


def data_identity(spec: RunSpec) -> str | None:
    """The identity of the converted dataset the run reads (:func:`dlbench.formats.identity`), which its record
    names; None for synthetic data, or where it is not converted yet."""
    return formats.identity(Path(spec.data_dir)) if spec.data_dir else None


def expected(spec: RunSpec) -> dict:
    """What a current record of ``spec`` holds: its run block (but what the run measures), its fingerprints and the
    identity of the data it reads (where that is converted already: else its conversion reruns it anyway)."""
    run = {key: value for key, value in spec.record_block(None).items() if key not in UNCOMPARED}
    return {"run": run, "fingerprints": fingerprints(spec), "data": data_identity(spec)}


DEFAULTS = {field.name: field.default for field in dataclasses.fields(RunSpec)
            if field.default is not dataclasses.MISSING}


# Each fingerprint's part of a run, in the words of a stale record's reason
FINGERPRINTED = {"network": "its network's description", "backend": "its backend's code or registry entry",
                 "task": "its task's code", "harness": "the harness's code"}


def staleness(record: dict, asked: dict) -> str | None:
    """Why ``record`` is not what ``asked`` (:func:`expected`) asks; None where it is. A setting a record of an
    older dlbench leaves out counts as its default."""
    run = record.get("run") or {}
    differs = [f"{key} {run.get(key, DEFAULTS.get(key))!r} (now {value!r})" for key, value in asked["run"].items()
               if run.get(key, DEFAULTS.get(key)) != value]
    held = (record.get("provenance") or {}).get("fingerprints") or {}
    differs += [f"{FINGERPRINTED[what]} changed" if held.get(what) else f"no {what} fingerprint"
                for what, value in asked["fingerprints"].items() if held.get(what) != value]
    data = (record.get("provenance") or {}).get("data_sha256")
    if asked.get("data") and data != asked["data"]:
        differs.append("the data it read was converted again, to other files" if data else "no data identity")
    return "; ".join(differs) or None


def stamp_path(record_path: Path) -> Path:
    """``results/.current/<the record's path without .json>/stamp.json``: a directory per record, because the main
    process writes a stamp while Snakemake builds its DAG, and Snakemake takes a directory it has listed once for
    all that is in it (its inventory): a stamp beside another record's, written after that one's was checked, was
    missing to it (two records named on the command line)."""
    return Path(STAMPS) / Path(record_path).relative_to("results").with_suffix("") / "stamp.json"


def stamp(record_path: Path, spec: RunSpec, log=print, root: Path = Path(".")) -> Path:
    """The record's stamp (see the module's text), written where the expected spec changed or the record is not
    current; its date set so that Snakemake reruns the record exactly when it is not current. It is written under
    ``root``: the working directory, or a dry run's stand-ins' (:data:`dlbench.plan.DRY_RUN_ROOT`), which leaves
    ``results/`` as it is and has Snakemake plan what the run would."""
    record_path, path = Path(record_path), stamp_path(record_path)
    asked = expected(spec)
    try:
        held = record_path.read_bytes()
        record = json.loads(held)
    except (OSError, ValueError):
        record = None  # none yet, or damaged: the run makes it (again) whatever its stamp's date
    why = staleness(record, asked) if isinstance(record, dict) else None
    stale = {"stale": {"why": why, "record_sha256": _sha256(held)}} if why else {}
    text = json.dumps({**asked, **stale}, sort_keys=True, indent=1)
    if why:
        log(f"dlbench: {record_path} is not current ({why}): it runs again")
    elif path.exists() and (path.read_text() == text or root != Path(".")):
        # Current: a dry run leaves the stamp's words to the run, which dates them before the record. (Where the stamp
        # is dated after it, a record put back as it was after it was judged stale, the dry run plans a run the run
        # does not make: a stand-in here, another input path, would be a rerun to Snakemake's metadata.)
        return path
    written = files.directory(root / path.parent, root / STAMPS) / path.name
    files.write_text(written, text)
    if record is not None and not why:  # current: the stamp predates it, as if written before the run
        recorded = record_path.stat().st_mtime_ns
        os.utime(written, ns=(recorded - 10**9, recorded - 10**9))
    return written


def judged_stale(record_path: Path) -> str | None:
    """Why the record as it lies now was found not current when the workflow last judged it, where it has not been
    made again since (Snakemake did not rerun it: another rerun trigger, ``--touch``, a job left out): its stamp's
    words. None where it was current, or has been made again, or lies outside this workflow's results."""
    try:
        path = stamp_path(record_path)
        judged = json.loads(path.read_text()).get("stale")
        return judged["why"] if judged and judged["record_sha256"] == _sha256(Path(record_path).read_bytes()) else None
    except (ValueError, OSError):  # not under results/, no stamp yet, or a stamp of an older dlbench
        return None
