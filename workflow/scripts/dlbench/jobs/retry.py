"""Retry what failed: set a workflow run's failed records aside and run the same command again, so that Snakemake
redoes only those runs, with the config, profile and executor they first ran with.

Records are never deleted: a failed record and its log move to ``results/runs-failed/`` with their finish time in
the name, and Snakemake sees the run's output as missing. A failed fetch's status (``data/raw/<family>/fetch.json``,
which only says what could not be had) is removed, so that the dataset is fetched again; the archives beside it are
left as they are.

Each workflow run that executes jobs remembers its command in ``results/.last-run.json`` (:func:`remember`, from the
Snakefile's ``onstart``, ``onsuccess`` and ``onerror``): Snakemake's arguments, where it was started, and the records
its config asks for. A dry run remembers nothing (it runs no hook).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from .. import files

LAST_RUN = Path("results/.last-run.json")
# Arguments that would redo more than what failed; each listed with whether values follow it (Snakemake's --force
# takes none, --forcerun takes rule names up to the next option).
FORCING = {"-F": False, "--forceall": False, "-f": False, "--force": False, "-R": True, "--forcerun": True}
DIRECTORY = ("-d", "--directory")


def remember(path: Path, argv: list[str], executable: str, workdir: Path, records: list[str]) -> None:
    """The workflow run's command, for :func:`replay`: ``argv`` as Snakemake got it, the interpreter that ran it,
    the directory it was started in, and the records its config asks for (which of them :func:`set_aside` may
    set aside)."""
    started_in = launch_directory(argv, Path(workdir))
    Path(path).parent.mkdir(parents=True, exist_ok=True)  # results/ itself, which a user may link elsewhere
    files.write_json(path, {"argv": list(argv[1:]), "executable": executable,
                            "started_in": str(started_in) if started_in else None, "workdir": str(workdir),
                            "records": sorted(records)}, indent=1)


def launch_directory(argv: list[str], workdir: Path) -> Path | None:
    """Where the command was started: Snakemake changes into ``--directory`` before any of the workflow's code runs,
    so the relative paths of ``argv`` (a ``--configfile``, a ``--profile``) are relative to a directory it no longer
    names. Without ``--directory`` it is ``workdir``; with a relative one, ``workdir`` less that path; with an
    absolute one it cannot be told (None)."""
    directory = next((argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg in DIRECTORY),
                     next((arg.split("=", 1)[1] for arg in argv if arg.startswith("--directory=")), None))
    if directory is None:
        return workdir
    if os.path.isabs(directory):
        return None
    started_in = workdir
    for _ in Path(os.path.normpath(directory)).parts:
        started_in = started_in.parent
    return started_in if (started_in / directory).resolve() == workdir.resolve() else None


def replay(last_run: dict, extra: list[str] = ()) -> tuple[Path, list[str]]:
    """The directory to start in and the command that runs the remembered workflow run again (``extra`` appended),
    without the arguments that would force more than the missing records to be made. Where the directory it was
    started in could not be told, its working directory, and only if every path it names is absolute there."""
    argv, kept, skipping = last_run["argv"], [], False
    for arg in argv:
        if arg in FORCING:
            skipping = FORCING[arg]
            continue
        if skipping and not arg.startswith("-"):
            continue
        skipping = False
        kept.append(arg)
    python = last_run["executable"] if Path(last_run["executable"]).exists() else sys.executable
    started_in = last_run["started_in"]
    if started_in is None:
        relative = [arg for arg in kept if not arg.startswith("-") and os.sep in arg and not os.path.isabs(arg)]
        if relative:
            raise ValueError(f"the last workflow run was started with --directory as an absolute path, from a "
                             f"directory it does not name, and names relative paths ({', '.join(relative)}): run "
                             "its command again from where you started it")
        started_in = last_run["workdir"]
    return Path(started_in), [python, "-m", "snakemake", *kept, *extra]


def set_aside(runs_dir: Path, archive_dir: Path, statuses=("failed",), only: set[Path] | None = None) -> list[Path]:
    """The records of ``statuses`` under ``runs_dir`` (those in ``only``, where given) moved with their logs into
    ``archive_dir``; where each went."""
    moved = []
    for record_path in sorted(Path(runs_dir).rglob("rep*.json")):
        if only is not None and record_path.resolve() not in only:
            continue
        record = json.loads(record_path.read_text())
        if record["status"] not in statuses:
            continue
        stamp = (record["provenance"].get("finished_at") or "unknown").replace(":", "")
        target = archive_dir / record_path.relative_to(runs_dir).with_suffix(f".{stamp}.json")
        target.parent.mkdir(parents=True, exist_ok=True)
        record_path.replace(target)
        log = record_path.with_suffix(".log")
        if log.exists():
            log.replace(target.with_suffix(".log"))
        moved.append(target)
    return moved


def forget_failed_fetches(raw_dir: Path) -> list[Path]:
    removed = []
    for status in sorted(Path(raw_dir).glob("*/fetch.json")):
        if json.loads(status.read_text())["status"] != "ok":
            status.unlink()
            removed.append(status)
    return removed
