"""Per-framework pip virtualenvs, built by the workflow where conda is not used.

Building never fails the workflow: a framework whose environment cannot be built here gets a
status file saying why, and its runs are recorded as ``unavailable: <reason>``.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from . import caffe_build

# Frameworks whose last release needs an older CPython than the workflow's: the runner stays on the
# workflow's Python and drives the framework in a worker process under that interpreter.
WORKER_PYTHONS = {"cntk": ("3.6", "CNTK 2.7 requires CPython 3.6 (its last wheels are cp36 only)")}
WORKER_PYTHON_VARIABLE = "DLBENCH_WORKER_PYTHON"  # how the monitor tells the runner that interpreter


def find_worker_python(environment: str) -> str:
    version, why = WORKER_PYTHONS[environment]
    found = shutil.which(f"python{version}")
    if not found:
        raise LookupError(f"{why}, and this machine has none (no python{version} on PATH)")
    return found


def build_venv(requirements: Path, venv_dir: Path, log, base_python: str | None = None) -> dict:
    """The virtualenv, made with ``base_python`` where given, else with the workflow's own Python."""
    python = venv_dir / "bin" / "python"
    try:
        if not python.exists():
            log.write(f"creating {venv_dir}\n")
            log.flush()
            if base_python:
                subprocess.run([base_python, "-m", "venv", str(venv_dir)], stdout=log, stderr=subprocess.STDOUT,
                               check=True)
            else:
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
    if venv_dir.name in WORKER_PYTHONS:
        return build_worker_venv(requirements, venv_dir, log)
    status = build_venv(requirements, venv_dir, log)
    source_build = SOURCE_BUILDS.get(venv_dir.name)
    if status["status"] == "ok" and source_build:
        try:
            status.update(source_build(venv_dir, jobs, log))
        except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
            status.update(status="unavailable",
                          reason=f"unavailable: {venv_dir.name} could not be built ({error}); see its log")
    return status


def build_worker_venv(requirements: Path, venv_dir: Path, log) -> dict:
    """A virtualenv on the framework's own old CPython, whose runs start their runner on this one."""
    try:
        base_python = find_worker_python(venv_dir.name)
    except LookupError as error:
        log.write(f"{error}\n")
        return {"status": "unavailable", "python": None, "reason": f"unavailable: {error}"}
    status = build_venv(requirements, venv_dir, log, base_python)
    if status["status"] == "ok":
        status.update(python=sys.executable, worker_python=status["python"])
    return status


def status(path: Path) -> dict:
    """The status file a build wrote; for runs without a built environment, the current Python.
    A ``python`` of None (a worker environment made by conda) also means the current Python."""
    if not path:
        return {"status": "ok", "python": sys.executable, "reason": ""}
    found = json.loads(Path(path).read_text())
    if found["status"] == "ok" and not found["python"]:
        found["python"] = sys.executable
    return found
