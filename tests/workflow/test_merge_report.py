"""make report: one runs table, appendix, figures and HTML report over the results of two workflow runs on
machines that could not share one, read where they lie; two directories that call one target two machines are
refused before any job."""
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
import yaml
from dlbench.checks import report_check

from ..conftest import ROOT
from ..unit.tables.test_merge import on_cpu, results_dir
from ..unit.tables.test_tables import on_gpus, on_target, record


def make_report(merged: Path, *results: Path) -> subprocess.CompletedProcess:
    """The documented command, with this interpreter's Snakemake (its environment is the tests')."""
    command = ["make", "-C", str(ROOT), "-o", ".venv/.workflow-installed", "report",
               f"BIN={Path(sys.executable).parent}", f"RESULTS={' '.join(map(str, results))}", f"MERGED={merged}",
               "CORES=2"]
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=1200)


def cell_of(values: list[float]) -> tuple[float, float, float, int]:
    """A cell worked out again from its runs by scipy: the geometric mean and the Student's t 95 % interval on
    the log scale (docs/statistics.md)."""
    logs = np.log(values)
    low, high = scipy.stats.t.interval(0.95, len(logs) - 1, loc=logs.mean(), scale=scipy.stats.sem(logs))
    return math.exp(logs.mean()), math.exp(low), math.exp(high), len(values)


def shown_cell(text: str) -> tuple[float, float, float, int]:
    estimate, low, high, n = re.match(r"([\d.]+) \[([\d.]+), ([\d.]+)\] \(n=(\d+)", text).groups()
    return float(estimate), float(low), float(high), int(n)


@pytest.mark.slow
def test_one_report_over_two_machines_results(tmp_path):
    laptop = tmp_path / "laptop"  # a workflow directory (its results/ below it) ...
    results_dir(laptop / "results", *(on_cpu(record(repetition=r, speed=100.0 + r), "Laptop CPU") for r in (1, 2)))
    node = tmp_path / "node" / "results"  # ... and a results directory: both are taken
    results_dir(node, *(on_cpu(record(repetition=r, speed=300.0 + r), "Server CPU") for r in (1, 2)))
    before = {path: path.read_bytes() for path in tmp_path.rglob("rep*.json")}
    merged = tmp_path / "merged"
    result = make_report(merged, laptop, node)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]

    runs = pd.read_csv(merged / "results" / "tables" / "runs.csv")
    assert sorted(runs["machine"]) == ["Laptop CPU, 2 cores"] * 2 + ["Server CPU, 2 cores"] * 2
    appendix = (merged / "results" / "tables" / "appendix.md").read_text()
    assert "Laptop CPU, 2 cores: cpu" in appendix and "Server CPU, 2 cores: cpu" in appendix  # never one mean
    assert (merged / "results" / "figures" / "mnist-generated" / "lenet" / "train_speed.svg").exists()
    report = (merged / "report.html").read_text(errors="replace")  # the files in it are encoded
    assert "mnist-generated / lenet" in report and "appendix.md" in report
    # what the report shows: the appendix on disk, its cells those of the runs (101, 102 and 301, 302 images/s)
    shown = report_check.embedded(merged / "report.html")["results/tables/appendix.md"].decode()
    assert shown == appendix
    row = next(line for line in shown.splitlines() if line.startswith("| train_speed "))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[:5] == ["train_speed", "images/s", "mnist-generated", "lenet", "pytorch"]
    assert [shown_cell(cell) for cell in cells[5:]] == [pytest.approx(cell_of([101.0, 102.0]), rel=0.01),
                                                       pytest.approx(cell_of([301.0, 302.0]), rel=0.01)]
    assert {path: path.read_bytes() for path in tmp_path.rglob("rep*.json") if merged not in path.parents} == before
    assert not (laptop / "results" / "tables").exists()  # nothing written beside the merged records

    clash = tmp_path / "clash"
    results_dir(clash, on_target(on_gpus(record(device="gpu1"), "Tesla K20m"), "p100"))
    results_dir(tmp_path / "other", on_target(on_gpus(record(device="gpu1"), "Tesla P100-PCIE-16GB"), "p100"))
    result = make_report(tmp_path / "refused", clash, tmp_path / "other")
    assert result.returncode != 0
    assert "hardware target 'p100' is two machines" in result.stderr + result.stdout
    assert not (tmp_path / "refused" / "results").exists()


def test_two_gpu_models_results_are_set_one_over_the_other_by_the_figure_rule(tmp_path):
    """compare_targets over merged records of a P100 node's and a K80 node's runs: the targets table and figure
    are made by their rules from the records alone."""
    def on(target: str, model: str, speed: float) -> str:
        runs = [on_gpus(record(device="gpu1", repetition=r, speed=speed), model) for r in (1, 2)]
        return results_dir(tmp_path / target, *(on_target(run, target) for run in runs))
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config.update(merge=[on("p100", "Tesla P100-PCIE-16GB", 1800.0), on("k80", "Tesla K80", 1000.0)],
                  compare_targets=[["p100", "k80"]])
    workdir = tmp_path / "merged"
    workdir.mkdir()
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    command = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory", str(workdir),
               "--configfile", str(workdir / "config.yaml"), "--cores", "2", "results/figures/targets.svg",
               "results/tables/targets.md"]
    result = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    table = pd.read_csv(workdir / "results" / "tables" / "targets.csv")
    assert list(table["speedup"]) == pytest.approx([1.8])
    assert list(table[["target_machine", "baseline_machine"]].iloc[0]) == ["Tesla P100-PCIE-16GB", "Tesla K80"]
    assert 'id="speedup pytorch mnist-generated lenet train_speed p100 k80"' in \
        (workdir / "results" / "figures" / "targets.svg").read_text()
