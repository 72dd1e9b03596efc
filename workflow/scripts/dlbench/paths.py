"""Where this package lies, for the processes it starts under other interpreters (a framework environment's)."""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # workflow/scripts
PROJECT_ROOT = PACKAGE_ROOT.parent.parent


def with_package(environment: dict) -> dict:
    """A copy of ``environment`` with this package first on ``PYTHONPATH``, where another interpreter finds it."""
    return {**environment, "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT),
                                                                       environment.get("PYTHONPATH")]))}
