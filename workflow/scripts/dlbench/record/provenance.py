"""What a record (and a ceiling's, a benchmark's) names of where and with what it was measured: the CPU's model, the
workflow's version and its commit."""
from __future__ import annotations

import platform
import subprocess
import tomllib
from collections import Counter
from pathlib import Path

from ..paths import PACKAGE_ROOT, PROJECT_ROOT
from ..spec import gpu_count


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine(record: dict) -> str | None:
    """The measured identity of what a run ran on, which a cell's runs must share to be averaged: its GPUs'
    model (``NVIDIA H100 80GB HBM3``; ``1x Tesla K20m + 1x Tesla P100-PCIE-16GB`` where they differ; how many
    is the device's), or for a CPU run the node's CPU model and cores; None where the record does not say (a
    GPU run that failed before it held its GPUs)."""
    provenance = record["provenance"]
    if gpu_count(record["run"]["device"]):
        models = Counter(gpu["name"] or "unnamed GPU" for gpu in provenance.get("gpus") or [])
        if len(models) > 1:
            return " + ".join(f"{count}x {model}" for model, count in sorted(models.items()))
        return next(iter(models), None)
    return f"{provenance['cpu_model']}, {provenance['cores']} cores" if provenance.get("cpu_model") else None


def dlbench_version() -> str:
    """The workflow's version, from its pyproject.toml (CHANGELOG.md says what each changed)."""
    with open(PROJECT_ROOT / "pyproject.toml", "rb") as stream:
        return tomllib.load(stream)["project"]["version"]


def environment(status_path: Path | None, status: dict) -> dict:
    """The framework environment a run ran in, for its record: its name (a hardware target's: ``p100@pytorch``;
    none built: the workflow's own Python), the requirements file its build installed and why that one."""
    return {"name": Path(status_path).parent.name if status_path else "the workflow's own Python",
            "requirements": status.get("requirements"), "choice": status.get("choice")}


def git_commit() -> str | None:
    """The code's commit, with "-dirty" when the working tree has uncommitted changes."""
    try:
        return subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=40"], cwd=PACKAGE_ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
