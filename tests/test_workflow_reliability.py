"""The workflow when things go wrong, as a user meets it: a dataset that cannot be fetched still gives
records and tables, a user's archive is kept, settings that change no measurement rerun nothing,
and the run ends with a summary of ok / failed / unavailable runs."""
import json
import subprocess
import sys

import pytest
import yaml

from .conftest import ROOT

QUICK = {"networks": ["lenet"], "batch_size": 16, "iterations": 12, "warmup_iterations": 2}


def snakemake(workdir, *args):
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
               str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=900)


@pytest.fixture(scope="module")
def unfetchable(tmp_path_factory):
    """Real MNIST from an empty mirror, one archive put in data/raw/mnist by hand (not MNIST's bytes),
    beside a synthetic case that runs."""
    workdir = tmp_path_factory.mktemp("unfetchable")
    (workdir / "empty-mirror").mkdir()
    config = {"frameworks": ["pytorch"], "repetitions": 1, "environment": "current",
              "mirrors": {"mnist": [(workdir / "empty-mirror").as_uri()]},
              "benchmarks": [{"dataset": "mnist", "data": "real", **QUICK},
                             {"dataset": "mnist", "data": "synthetic", **QUICK}]}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    by_hand = workdir / "data" / "raw" / "mnist" / "train-labels-idx1-ubyte.gz"
    by_hand.parent.mkdir(parents=True)
    by_hand.write_bytes(b"a half-copied archive")
    result = snakemake(workdir)
    return workdir, config, by_hand, result


@pytest.mark.slow
def test_a_dataset_that_cannot_be_fetched_yields_failed_records_and_tables(unfetchable):
    workdir, _, by_hand, result = unfetchable
    assert result.returncode == 0, result.stderr[-5000:]
    runs = workdir / "results" / "runs" / "pytorch"
    failed = json.loads((runs / "mnist" / "lenet" / "cpu" / "fp32" / "train" / "rep1.json").read_text())
    assert failed["status"] == "failed"
    assert failed["reason"].startswith("dataset mnist could not be had: 4 of 4 mnist archive(s) cannot be had")
    assert "data/raw/mnist/train-labels-idx1-ubyte.gz: checksum mismatch" in failed["reason"]
    assert "could not fetch t10k-images-idx3-ubyte.gz from any mirror" in failed["reason"]
    assert "mirrors.mnist" in failed["reason"] and "make retry-failed" in failed["reason"]
    assert by_hand.read_bytes() == b"a half-copied archive"  # the user's file is kept
    assert not list(by_hand.parent.glob("*.part"))
    ok = json.loads((runs / "mnist-synthetic" / "lenet" / "cpu" / "fp32" / "train" / "rep1.json").read_text())
    assert ok["status"] == "ok"
    appendix = (workdir / "results" / "tables" / "appendix.md").read_text()
    assert "failed: dataset mnist could not be had" in appendix
    assert (workdir / "results" / "figures" / "mnist" / "lenet" / "train_speed.png").exists()


@pytest.mark.slow
def test_the_run_ends_with_a_summary_of_the_runs(unfetchable):
    _, _, _, result = unfetchable
    output = result.stdout + result.stderr
    assert "dlbench runs:" in output
    row = next(line for line in output.splitlines() if line.strip().startswith("pytorch "))
    assert row.split()[1:] == ["1", "1", "0", "0"]  # ok, failed, unavailable, not run
    assert "failed (1): dataset mnist could not be had" in output
    assert "failed runs' logs: results/runs/pytorch/mnist/lenet/cpu/fp32/train/rep1.log" in output


@pytest.mark.slow
def test_settings_that_change_no_measurement_rerun_nothing(unfetchable):
    workdir, config, _, _ = unfetchable
    changed = {**config, "measurement": {"timeout_minutes": 7}, "slots": {"wait_minutes": 3},
               "mirrors": {"mnist": [(workdir / "another-mirror").as_uri()]}}
    (workdir / "config.yaml").write_text(yaml.safe_dump(changed))
    try:
        result = snakemake(workdir, "--dry-run")
    finally:
        (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr, result.stdout[-3000:]
