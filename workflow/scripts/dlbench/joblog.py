"""Helpers for the thin Snakemake entry points (workflow/scripts/*.py)."""
from __future__ import annotations

import contextlib
import sys
import traceback


@contextlib.contextmanager
def logged(log_path: str):
    """Send the job's prints and tracebacks to its Snakemake log, line-buffered for `tail -f`."""
    with open(log_path, "a", buffering=1) as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        try:
            yield log
        except Exception:
            traceback.print_exc()
            sys.stderr.flush()
            raise
