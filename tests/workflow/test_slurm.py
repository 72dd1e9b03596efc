"""The workflow through Slurm: a one-node cluster started here, the default config (PyTorch, one
repetition, in the test's interpreter) run with --profile profiles/slurm, every run a Slurm job."""
import json
import subprocess
import sys

import pytest
import yaml

from ..conftest import ROOT
from .slurm_cluster import LocalSlurm


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    cluster = LocalSlurm(tmp_path_factory.mktemp("slurm"))
    try:
        cluster.start()  # raises if it cannot: the test fails, it is never skipped
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.slow
def test_the_default_config_runs_through_the_slurm_profile(slurm, tmp_path):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(frameworks=["pytorch"], repetitions=1, environment="current")
    # PyTorch's cases only: those naming their own frameworks keep PyTorch, or go
    config["benchmarks"] = [{**bench, "frameworks": ["pytorch"]} if "frameworks" in bench else bench
                            for bench in config["benchmarks"] if "pytorch" in bench.get("frameworks", ["pytorch"])]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
               "--directory", str(tmp_path), "--configfile", str(tmp_path / "config.yaml"),
               "--profile", str(ROOT / "profiles" / "slurm"),
               # this cluster keeps no accounting (no slurmdbd): sacct would hang, squeue answers
               "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2"]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=1800)
    assert result.returncode == 0, result.stderr[-6000:]

    records = [json.loads(path.read_text()) for path in sorted((tmp_path / "results" / "runs").rglob("rep*.json"))]
    # one network per benchmark entry, one run per task, one repetition
    assert len(records) == sum(len(bench.get("tasks", ["train"])) for bench in config["benchmarks"])
    for record in records:
        assert record["status"] == "ok", record["reason"]
        assert record["timing"]["images_per_second_mean"] > 0
    jobs = {record["provenance"]["slurm_job_id"] for record in records}
    assert None not in jobs and len(jobs) == len(records)  # every run was its own Slurm job
    assert (tmp_path / "results" / "tables" / "appendix.md").exists()
    queue = subprocess.run(["squeue", "--noheader", "--states=all", "--format=%j %T"], capture_output=True,
                           text=True, check=True).stdout
    assert queue.count("COMPLETED") >= len(records)
