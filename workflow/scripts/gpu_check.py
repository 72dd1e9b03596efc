"""Command line (make gpu-check): the GPU acceptance check in one call, on one GPU of this node.

Runs .test/config-gpu-check/config.yaml (PyTorch and Keras 3 on JAX, LeNet and ResNet50, every task, fp32
and bf16, compiled and not) in DIRECTORY with this interpreter's frameworks (environment: current), probes
TF32, and prints a verdict per check and cell (dlbench.checks.acceptance), also written to DIRECTORY/gpu-check.md.
Exit 1 if any verdict is FAIL. Where NVML finds no GPU, nothing runs and every verdict is unavailable.

    python workflow/scripts/gpu_check.py [--directory gpu-check] [--cores N]
"""
import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from dlbench.checks import acceptance
from dlbench.hardware import gpu
from dlbench.record.io import load_records
from dlbench.record.provenance import dlbench_version, git_commit

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".test" / "config-gpu-check" / "config.yaml"

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--directory", type=Path, default=Path("gpu-check"), help="the workflow's working directory")
parser.add_argument("--cores", type=int, default=os.cpu_count())
args = parser.parse_args()

gpus, why = gpu.inventory()
if not gpus:
    found, node = acceptance.verdicts([], None, unavailable=f"no GPU ({why or 'NVML lists none'})"), "no GPU"
else:
    probe = gpu.GpuProbe(gpus[:1])
    described = probe.describe()[0]
    probe.close()
    node = f"{described['name']}, driver {described['driver']}"
    workflow = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
                               "--directory", str(args.directory), "--configfile", str(CONFIG),
                               "--cores", str(args.cores), "--resources", "gpu=1", "results/tables/runs.csv"],
                              check=False)
    if workflow.returncode != 0:
        print(f"the check's workflow failed (exit {workflow.returncode}); verdicts of the runs it made:")
    records = load_records(sorted((args.directory / "results" / "runs").rglob("rep*.json")))
    found = acceptance.verdicts(records, acceptance.tf32_probe(), benchmarks=ROOT / acceptance.BENCHMARKS)
text = (f"GPU acceptance check: {node}, {datetime.now(UTC):%Y-%m-%d}, dlbench {dlbench_version()} "
        f"({git_commit() or 'commit unknown'})\n\n" + acceptance.table(found) + "\n")
print(text)
args.directory.mkdir(parents=True, exist_ok=True)
(args.directory / "gpu-check.md").write_text(text)
sys.exit(1 if any(verdict.verdict == "FAIL" for verdict in found) else 0)
