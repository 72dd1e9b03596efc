"""Per-framework pip virtualenvs, built by the workflow where conda is not used.

Building never fails the workflow: a framework whose environment cannot be built here gets a
status file saying why, and its runs are recorded as ``unavailable: <reason>``.
"""
from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

from . import caffe_build


def build_venv(requirements: Path, venv_dir: Path, log) -> dict:
    python = venv_dir / "bin" / "python"
    try:
        if not python.exists():
            log.write(f"creating {venv_dir}\n")
            log.flush()
            venv.EnvBuilder(with_pip=True).create(venv_dir)
        command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)]
        log.write(" ".join(command) + "\n")
        log.flush()
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
        frozen = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as error:
        return {"status": "unavailable", "python": None,
                "reason": f"unavailable: environment from {requirements} could not be built ({error}); "
                          "see its log"}
    return {"status": "ok", "python": str(python.absolute()), "reason": "", "packages": frozen}


# Environments whose framework is compiled from source after the pip install (with all cores).
SOURCE_BUILDS = {"caffe": caffe_build.build}


def build_environment(requirements: Path, venv_dir: Path, jobs: int, log) -> dict:
    """The virtualenv from ``requirements``, and the framework built into it where it has no package."""
    status = build_venv(requirements, venv_dir, log)
    source_build = SOURCE_BUILDS.get(venv_dir.name)
    if status["status"] == "ok" and source_build:
        try:
            status.update(source_build(venv_dir, jobs, log))
        except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
            status.update(status="unavailable",
                          reason=f"unavailable: {venv_dir.name} could not be built ({error}); see its log")
    return status


def status(path: Path) -> dict:
    """The status file a build wrote; for runs without a built environment, the current Python."""
    if not path:
        return {"status": "ok", "python": sys.executable, "reason": ""}
    return json.loads(Path(path).read_text())
