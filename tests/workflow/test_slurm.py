"""The workflow through Slurm: a one-node cluster started here, the default config (PyTorch, one
repetition, in the test's interpreter) run with --profile profiles/slurm, every run a Slurm job."""
import json
import os
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


def through_slurm(config: dict, directory, client=lambda command: command) -> list[dict]:
    """The workflow run on ``config`` with --profile profiles/slurm in ``directory`` (as the cluster's ``client``
    runs a command): its records."""
    (directory / "config.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
               "--directory", str(directory), "--configfile", str(directory / "config.yaml"),
               "--profile", str(ROOT / "profiles" / "slurm"),
               # this cluster keeps no accounting (no slurmdbd): sacct would hang, squeue answers
               "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "2"]
    result = subprocess.run(client(command), capture_output=True, text=True, check=False, timeout=1800)
    assert result.returncode == 0, result.stderr[-6000:]
    return [json.loads(path.read_text()) for path in sorted((directory / "results" / "runs").rglob("rep*.json"))]


@pytest.mark.slow
def test_the_default_config_runs_through_the_slurm_profile(slurm, tmp_path):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(frameworks=["pytorch"], repetitions=1, environment="current")
    # PyTorch's cases only: those naming their own frameworks keep PyTorch, or go; on MNIST or synthetic data (CI's
    # time: each CIFAR10 and ILSVRC12 conversion would be Slurm jobs of its own; tests/workflow/test_workflow.py
    # converts ILSVRC12's shards, tests/unit/formats/test_formats.py every family)
    config["benchmarks"] = [{**bench, "frameworks": ["pytorch"]} if "frameworks" in bench else bench
                            for bench in config["benchmarks"] if "pytorch" in bench.get("frameworks", ["pytorch"])
                            and (bench["dataset"] == "mnist" or bench.get("data") == "synthetic")]
    # Where runs go, not what they measure: each case at its smallest (CI's time), its cells and tasks as they are
    config["generated"] = {"train_images": 256, "test_images": 64}
    config["benchmarks"] = [{**bench, "batch_size": min(bench.get("batch_size", 64), 8), "latency_calls": 10,
                             **({"epochs": 1} if "accuracy" in bench.get("tasks", []) else
                                {"iterations": 3, "warmup_iterations": 1})} for bench in config["benchmarks"]]
    records = through_slurm(config, tmp_path)
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


@pytest.mark.slow
def test_two_hardware_targets_run_in_their_own_partitions_and_columns(slurm, tmp_path):
    """.test/config-hardware: two targets on two partitions of the cluster (one node with the feature both ask
    for); each run is a Slurm job in its target's partition, recorded under its target, and each target is a
    column of the appendix."""
    config = yaml.safe_load((ROOT / ".test" / "config-hardware" / "config.yaml").read_text())
    config["environment"] = "current"
    records = through_slurm(config, tmp_path)
    partitions = {target["name"]: target["slurm"]["partition"] for target in config["hardware"]}
    placed = sorted((r["run"]["hardware"], r["run"]["network"], r["provenance"]["slurm_partition"]) for r in records)
    assert placed == sorted([(t, "lenet", partitions[t]) for t in partitions for _ in range(2)]
                            + [("node-a", "alexnet", "debug")] * 2)  # node-b runs MNIST only
    for record in records:
        assert record["status"] == "ok", record["reason"]
        assert record["provenance"]["slurm_node"] == "localhost"
    # node-b's threads are its own (one core); node-a's the config's (all the cores its jobs are given)
    threads = {(r["run"]["hardware"], r["run"]["threads"]) for r in records}
    assert threads == {("node-a", os.cpu_count()), ("node-b", 1)}
    assert (tmp_path / "results" / "runs" / "pytorch" / "mnist-synthetic" / "lenet" / "node-b@cpu").is_dir()
    appendix = (tmp_path / "results" / "tables" / "appendix.md").read_text()
    assert "node-a: cpu" in appendix and "node-b: cpu" in appendix
