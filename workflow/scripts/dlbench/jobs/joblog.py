"""Helpers for the thin Snakemake entry points (workflow/scripts/*.py)."""
from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from pathlib import Path

from ..files import free_bytes

# Room below which a failed job's disk is the likely cause of its error, whatever the error says: LMDB reports a full
# disk as "mdb_txn_commit: Input/output error", with no errno
NEARLY_FULL_BYTES = 64 * 2**20


@contextlib.contextmanager
def logged(log_path: str, writes_to: str | Path | None = None):
    """Send the job's prints and tracebacks to its Snakemake log, line-buffered for `tail -f`. A full disk, which
    the system reports naming no file, is said with where the job writes (``writes_to``, else the workflow's
    directory) and the room left there: on ENOSPC, and on any error where that room is nearly gone."""
    with open(log_path, "a", buffering=1) as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            yield log
        except Exception as error:
            traceback.print_exc()
            where = Path(writes_to or os.getcwd())
            if isinstance(error, OSError) and error.errno == errno.ENOSPC:
                print(disk_full_words(where, "this job's output" if writes_to else None), file=sys.stderr)
            elif (free := free_bytes(_existing(where))) is not None and free < NEARLY_FULL_BYTES:
                print(f"dlbench: the device of {where} has {free / 2**20:,.1f} MiB free: a full disk is the likely "
                      f"cause of the error above ({type(error).__name__}: {error}); free space there, then rerun",
                      file=sys.stderr)
            sys.stderr.flush()
            raise


def _existing(path: Path) -> Path:
    """``path`` or the nearest of its parents that exists (a job's output may not, yet)."""
    return next(place for place in (path, *path.parents) if place.exists())


def disk_full_words(where: Path, what: str | None = None) -> str:
    """What a job that found its disk full says: where it writes (``what`` it is there; by default the workflow's
    directory, its data/ and results/) and the room left on its file system, and what to do."""
    free = free_bytes(_existing(where))
    room = "its free space unknown" if free is None else f"{free / 2**20:,.1f} MiB free"
    return (f"dlbench: no space left on the device of {where} ({what or 'data/, results/ and .snakemake/ are there'}; "
            f"{room}): free space there, then rerun; what this job wrote is incomplete and will be made again")
