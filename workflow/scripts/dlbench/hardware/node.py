"""The node the workflow runs on: which node it is, read from files while Snakemake builds the DAG, and what it can
measure, gathered by a job (``rules/common.smk``'s ``node_facts`` checkpoint).

Snakemake reruns a job only from what it sees when it builds the DAG, so a ceiling measured on another node (other
GPUs, another driver) must be told apart then. That look is cheap and cannot hang: the host name and the NVIDIA
driver's own files under /proc, no NVML, no subprocess. The queries that can fail or take time (RAPL counters, the
CPU's peak, ``nvidia-smi``) run in the job, whose file is keyed by the identity, so a changed node asks again.
"""
from __future__ import annotations

import hashlib
import json
import socket
from pathlib import Path

DRIVER = Path("/proc/driver/nvidia")


def identity(driver: Path = DRIVER) -> dict:
    """What tells this node from another, from files alone: its host name, the NVIDIA driver's version line and
    each GPU's model at its bus (the driver's ``gpus/*/information``); no driver: ``None`` and no GPUs."""
    try:
        version = (driver / "version").read_text().splitlines()[0].strip()
    except (OSError, IndexError):
        version = None
    gpus = []
    for information in sorted(driver.glob("gpus/*/information")):
        fields = dict(line.split(":", 1) for line in information.read_text().splitlines() if ":" in line)
        bus = fields.get("Bus Location", information.parent.name)
        gpus.append(f"{fields.get('Model', '?').strip()} at {bus.strip()}")
    return {"host": socket.gethostname(), "driver": version, "gpus": gpus}


def key(node: dict) -> str:
    """The identity as a file name: the host and a digest of the rest."""
    digest = hashlib.sha256(json.dumps(node, sort_keys=True).encode()).hexdigest()[:12]
    return f"{node['host']}-{digest}"


def measure() -> dict:
    """What this node can measure, each with its reason where it cannot: CPU energy (RAPL counters), MFU on a CPU (a
    CPU whose peak dlbench knows), and the GPUs ``nvidia-smi`` lists (idle GPUs beside CPU runs draw power)."""
    from ..envs import node_gpus
    from .host import Rapl
    from .peaks import cpu_facts, cpu_peak

    rapl, peak = Rapl(), cpu_peak("fp32", 1, cpu_facts())
    return {"identity": identity(), "rapl": rapl.error is None, "rapl_reason": rapl.error,
            "cpu_peak": peak.tflops is not None, "cpu_peak_reason": peak.reason, "gpus": node_gpus()}
