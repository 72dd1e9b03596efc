"""Repetitions as a target, end to end on .test/config-repetitions: real PyTorch runs through Snakemake; the first
runs of one cell are made noisy and the other's quiet (their speeds rewritten), and the repetitions checkpoints give
the noisy cell more runs, up to max, and the quiet one none."""
import json
import shutil

import pytest
import yaml

from ..conftest import ROOT
from .test_workflow_reliability import snakemake

CONFIG = ROOT / ".test" / "config-repetitions" / "config.yaml"
CASE = "results/runs/pytorch/mnist-synthetic/{network}/cpu/fp32/train"
SPEEDS = {"lenet": (1000.0, 1400.0, 700.0), "mlp": (3000.0, 3006.0, 2994.0)}  # noisy, quiet


def rewrite_speeds(workdir):
    """Each first run's speed, clean (not contended), as SPEEDS says."""
    for network, speeds in SPEEDS.items():
        for repetition, speed in enumerate(speeds, 1):
            path = workdir / CASE.format(network=network) / f"rep{repetition}.json"
            record = json.loads(path.read_text())
            assert record["status"] == "ok", record["reason"]
            record["timing"].update(images_per_second_mean=speed, contention_share=0.0)
            path.write_text(json.dumps(record))


@pytest.mark.slow
def test_a_noisy_cell_gets_more_runs_and_a_quiet_one_does_not(tmp_path):
    shutil.copy(CONFIG, tmp_path / "config.yaml")
    maximum = yaml.safe_load(CONFIG.read_text())["repetitions"]["max"]
    first = [f"{CASE.format(network=network)}/rep{repetition}.json" for network in SPEEDS for repetition in (1, 2, 3)]
    result = snakemake(tmp_path, *first)
    assert result.returncode == 0, result.stderr[-5000:]
    rewrite_speeds(tmp_path)

    result = snakemake(tmp_path, "results/tables/runs.csv")
    assert result.returncode == 0, result.stderr[-5000:]
    noisy, quiet = (sorted(p.name for p in (tmp_path / CASE.format(network=n)).glob("rep*.json")) for n in SPEEDS)
    assert noisy == [f"rep{r}.json" for r in range(1, maximum + 1)]
    assert quiet == ["rep1.json", "rep2.json", "rep3.json"]
    decided = tmp_path / "results" / "repetitions" / "pytorch" / "mnist-synthetic" / "mlp" / "cpu" / "fp32"
    decision = json.loads((decided / "train.json").read_text())
    assert (decision["runs"], decision["counted"]) == (3, 3) and decision["why"].startswith("reached: ±")
    said = result.stdout + result.stderr
    assert "dlbench repetitions of pytorch mnist-synthetic lenet cpu fp32 train: ±" in said
    assert f"more (max {maximum})" in said
    runs_table = (tmp_path / "results/tables/runs.csv").read_text()
    assert runs_table.count("\n") == 1 + maximum + 3
    assert "pytorch mnist-synthetic mlp" not in said.split("cases reached it")[1]  # the quiet one reached it

    again = snakemake(tmp_path, "results/tables/runs.csv")
    assert again.returncode == 0 and "Nothing to be done" in again.stdout + again.stderr
