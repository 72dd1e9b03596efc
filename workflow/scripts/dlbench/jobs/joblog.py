"""Helpers for the thin Snakemake entry points (workflow/scripts/*.py)."""
from __future__ import annotations

import contextlib
import errno
import os
import sys
import traceback
from pathlib import Path

from ..files import free_bytes


@contextlib.contextmanager
def logged(log_path: str):
    """Send the job's prints and tracebacks to its Snakemake log, line-buffered for `tail -f`. A full disk, which
    the system reports naming no file, is said with where the job writes and the room left there."""
    with open(log_path, "a", buffering=1) as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            yield log
        except Exception as error:
            traceback.print_exc()
            if isinstance(error, OSError) and error.errno == errno.ENOSPC:
                print(disk_full_words(), file=sys.stderr)
            sys.stderr.flush()
            raise


def disk_full_words(where: Path | None = None) -> str:
    """What a job that found its disk full says: the workflow's directory (its data/ and results/) and the room
    left on its file system, and what to do."""
    where = Path(where or os.getcwd())
    free = free_bytes(where)
    room = "its free space unknown" if free is None else f"{free / 2**20:,.1f} MiB free"
    return (f"dlbench: no space left on the device of {where} (data/, results/ and .snakemake/ are there; "
            f"{room}): free space there, then rerun; what this job wrote is incomplete and will be made again")
