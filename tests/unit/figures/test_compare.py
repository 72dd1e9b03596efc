"""Two result sets compared cell by cell, from their records or their runs.csv, by the command line."""
import math
import re
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from dlbench.figures import compare
from dlbench.record.io import load_records, write_record
from dlbench.tables.runs import runs_table

from ...conftest import ROOT
from ..tables.test_tables import record


def results(directory, speeds: dict, table=False, cpu="a CPU", ceiling=0.2):
    """A results directory with a record per (framework, repetition) speed, as the workflow lays them out, of runs
    on ``cpu`` whose ceiling measured ``ceiling`` TFLOP/s; ``table``: only its runs.csv, as a set copied from
    another machine may be."""
    paths = []
    for framework, values in speeds.items():
        for repetition, speed in enumerate(values, 1):
            status = "ok" if speed else "unavailable"
            item = record(framework, repetition=repetition, speed=speed or 0.0, status=status,
                          reason="" if speed else "not on this machine")
            item["provenance"]["cpu_model"] = cpu
            if speed:
                compute = item["compute"]
                compute.update(ceiling_tflops=ceiling, ceiling_fraction=compute["achieved_tflops"] / ceiling)
            case = directory / "runs" / framework / "mnist-generated" / "lenet" / "cpu" / "fp32" / "train"
            path = case / f"rep{repetition}.json"
            write_record(item, path)
            paths.append(path)
    if table:
        (directory / "tables").mkdir(parents=True)
        runs_table(load_records(paths)).to_csv(directory / "tables" / "runs.csv", index=False)
        for path in paths:
            path.unlink()
    return directory


@pytest.fixture
def sets(tmp_path):
    a = results(tmp_path / "laptop" / "results", {"pytorch": [100, 104, 102], "tensorflow": [200, 230, 215],
                                                  "mxnet": [50, 50, 50], "caffe": [80, 80]})
    b = results(tmp_path / "node", {"pytorch": [150, 152, 149], "tensorflow": [205, 220, 210],
                                    "mxnet": [None, None, None], "cntk": [90, 91]}, table=True)
    return a, b


def test_each_cell_gets_its_ratio_interval_and_verdict_and_cells_of_one_set_are_listed(sets):
    compared = compare.compare(compare.runs_of(sets[0]), compare.runs_of(sets[1]))
    speed = compared[compared["metric"] == "train_speed"].set_index("framework")
    pytorch, tensorflow = speed.loc["pytorch"], speed.loc["tensorflow"]
    assert pytorch["ratio"] == pytest.approx(((150 * 152 * 149) / (100 * 104 * 102)) ** (1 / 3), rel=1e-9)
    assert pytorch["ratio_low"] < pytorch["ratio"] < pytorch["ratio_high"] and pytorch["ratio_low"] > 1.05
    assert pytorch["verdict"] == "faster" and pytorch["resolved"]
    # 2 % slower at a cv of 7 %: neither a difference nor the same; the runs that would resolve it are named
    assert tensorflow["ratio_low"] < 1 < tensorflow["ratio_high"] and not tensorflow["resolved"]
    assert tensorflow["verdict"].startswith("not resolved (about ") and tensorflow["verdict"].endswith(
        " runs each would resolve it)")
    assert speed.loc["caffe", "in"] == "A only" and speed.loc["caffe", "b_cell"] == "not in this set"
    assert speed.loc["caffe", "verdict"] == "not resolved (a cell has no value)"
    assert speed.loc["cntk", "in"] == "B only" and speed.loc["cntk", "b_cell"].startswith("90.50 [")
    assert speed.loc["mxnet", "b_cell"] == "unavailable: not on this machine" and pd.isna(speed.loc["mxnet", "ratio"])
    assert "gpu_power" not in set(compared["metric"])  # neither set measured it


def test_a_set_against_itself_is_never_called_faster_or_slower(sets):
    """An A/A comparison: whatever the noise, the ratio's interval holds 1."""
    runs = compare.runs_of(sets[0])
    compared = compare.compare(runs, runs)
    assert len(compared) and not compared["resolved"].any()
    assert (compared.dropna(subset=["ratio"])["ratio"] == 1).all()


@pytest.mark.parametrize("ceiling_b", [0.2, 0.25])
def test_a_fraction_of_each_sets_own_ceiling_is_resolved_only_where_the_ceilings_agree(tmp_path, ceiling_b):
    """Each set measures its ceiling once: where B's differs from A's, the interval of the ceiling fractions' ratio
    lacks the ceilings' noise, and no verdict is drawn from it."""
    a = results(tmp_path / "a", {"pytorch": [100, 104, 102]})
    b = results(tmp_path / "b", {"pytorch": [150, 152, 149]}, ceiling=ceiling_b)
    compared = compare.compare(compare.runs_of(a), compare.runs_of(b)).set_index("metric")
    assert compared.loc["train_speed", "verdict"] == "faster"
    fraction = compared.loc["ceiling_fraction"]
    assert fraction["ratio"] == pytest.approx(compared.loc["train_speed", "ratio"] * 0.2 / ceiling_b)
    if ceiling_b == 0.2:
        assert fraction["verdict"] == "higher" and fraction["resolved"]
    else:
        assert fraction["verdict"] == ("not resolved (B's ceilings are ×1.25 A's: each is one measurement, whose "
                                       "noise the interval does not hold)") and not fraction["resolved"]


def test_the_command_line_writes_the_table_and_figure(sets, tmp_path):
    out = tmp_path / "comparison"
    subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "compare_results.py"), str(sets[0]),
                    str(sets[1]), "--out", str(out)], check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"})
    text = (out / "comparison.md").read_text()
    assert "# node (B) against laptop (A)" in text  # a directory called results is named by its parent
    assert pd.read_csv(out / "comparison.csv").query("metric == 'train_speed'")["resolved"].sum() == 1
    assert re.search(r"\| faster +\|", text)
    svg = (out / "comparison_train_speed.svg").read_text()
    assert 'id="ratio pytorch mnist-generated lenet cpu fp32 train"' in svg and 'id="ratio cntk' not in svg
    assert "not in this set" in svg  # the cells of one set, listed below


@pytest.mark.parametrize("value,allowed", [("inf", "≥ 0"), ("nan", "≥ 0"), ("-3.5", "≥ 0"), ("fast", "≥ 0")])
def test_a_runs_table_from_elsewhere_with_a_value_no_measurement_has_is_refused(sets, value, allowed):
    table = sets[1] / "tables" / "runs.csv"
    runs = pd.read_csv(table, dtype=str, keep_default_na=False)
    runs.loc[2, "train_speed"] = value
    runs.to_csv(table, index=False)
    with pytest.raises(ValueError, match=rf"runs.csv, line 4, train_speed: '{value}' is not a measurement "
                                         rf"\(allowed: a finite number {allowed}, "
                                         r"or empty where it was not measured\)"):
        compare.runs_of(sets[1])


def test_a_signed_metric_may_be_negative(sets):
    table = sets[1] / "tables" / "runs.csv"
    runs = pd.read_csv(table, dtype=str, keep_default_na=False).assign(unaccounted_share="-0.41")
    runs.to_csv(table, index=False)
    assert (compare.runs_of(sets[1])["unaccounted_share"] == -0.41).all()


def test_reasons_stay_text_in_markdown_tables(sets):
    """A reason's | would add a column, its HTML would be rendered: both are escaped."""
    table = sets[1] / "tables" / "runs.csv"
    runs = pd.read_csv(table, dtype=str, keep_default_na=False)
    runs.loc[runs["framework"] == "mxnet", "reason"] = "a | b <img src=x onerror=alert(1)>"
    runs.to_csv(table, index=False)
    text = compare.markdown(compare.compare(compare.runs_of(sets[0]), compare.runs_of(sets[1])), "A", "B")
    row = next(line for line in text.splitlines() if "| mxnet" in line and "train_speed" in line)
    assert "unavailable: a \\| b &lt;img src=x onerror=alert(1)>" in row
    header = next(line for line in text.splitlines() if line.startswith("| metric"))
    assert row.replace("\\|", "").count("|") == header.count("|")


def test_a_directory_without_results_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="holds no results"):
        compare.runs_of(tmp_path)


def workflow_results(workdir, benchmarks):
    """A results directory the workflow makes from a config of PyTorch's ``benchmarks``, two repetitions."""
    workdir.mkdir()
    config = {"frameworks": ["pytorch"], "repetitions": 2, "environment": "current", "benchmarks": benchmarks}
    (workdir / "config.yaml").write_text(yaml.safe_dump(config))
    subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), "--directory",
                    str(workdir), "--configfile", str(workdir / "config.yaml"), "--cores", "2",
                    "results/tables/runs.csv"], check=True, capture_output=True, timeout=900)
    return workdir / "results"


@pytest.mark.slow
def test_two_result_sets_of_different_configs_are_compared(tmp_path):
    lenet = {"dataset": "mnist", "data": "synthetic", "networks": ["lenet"], "iterations": 30, "warmup_iterations": 3}
    a = workflow_results(tmp_path / "small-batch", [{**lenet, "batch_size": 16}])
    b = workflow_results(tmp_path / "large-batch", [{**lenet, "batch_size": 128},
                                                    {**lenet, "networks": ["mlp"], "batch_size": 128}])
    out = tmp_path / "comparison"
    subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "compare_results.py"), str(a), str(b),
                    "--out", str(out)], check=True, capture_output=True,
                   env={"PYTHONPATH": str(ROOT / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"})
    speed = pd.read_csv(out / "comparison.csv").query("metric == 'train_speed'").set_index("network")
    # B over A, from each set's own records (which is faster is this machine's load, not the comparison's behaviour)
    speeds = {side: runs.query("network == 'lenet' and task == 'train'")["train_speed"]
              for side, runs in (("a", compare.runs_of(a)), ("b", compare.runs_of(b)))}
    geometric = {side: math.prod(values) ** (1 / len(values)) for side, values in speeds.items()}
    assert speed.loc["lenet", "in"] == "both" and speed.loc["lenet", "a_n"] == 2
    assert speed.loc["lenet", "ratio"] == pytest.approx(geometric["b"] / geometric["a"])
    assert speed.loc["mlp", "in"] == "B only" and speed.loc["mlp", "a_cell"] == "not in this set"
    assert "# large-batch (B) against small-batch (A)" in (out / "comparison.md").read_text()
    assert 'id="ratio pytorch mnist-synthetic lenet cpu fp32 train"' in (out / "comparison_train_speed.svg").read_text()


def test_the_cells_of_two_machines_are_compared_and_each_sides_machine_named(tmp_path):
    a = results(tmp_path / "laptop", {"pytorch": [100, 104, 102]}, cpu="Intel Core i7-8650U")
    b = results(tmp_path / "node", {"pytorch": [300, 310, 305]}, table=True, cpu="AMD EPYC 9654")
    speed = compare.compare(compare.runs_of(a), compare.runs_of(b)).query("metric == 'train_speed'").iloc[0]
    assert (speed["a_machine"], speed["b_machine"]) == ("Intel Core i7-8650U, 2 cores", "AMD EPYC 9654, 2 cores")
    geometric = (300 * 310 * 305 / (100 * 104 * 102)) ** (1 / 3)
    assert speed["in"] == "both" and speed["ratio"] == pytest.approx(geometric) and speed["verdict"] == "faster"


@pytest.mark.parametrize(("content", "words"), [
    ("", "runs.csv is empty: not a runs table"),
    ("framework,dataset,data_mode,network,device,variant,repetition,status\n",  # no task
     "runs.csv is not a runs table: it has no task column"),
    ("x,y\n1,2\n", ("runs.csv is not a runs table: it has no framework, dataset, data_mode, network, device, "
                    "variant, task, repetition, status column (its columns: x, y)")),
])
def test_a_set_whose_runs_table_is_not_one_is_refused_naming_the_file(tmp_path, content, words):
    a = results(tmp_path / "a", {"pytorch": [100, 104]})
    (tmp_path / "b" / "tables").mkdir(parents=True)
    (tmp_path / "b" / "tables" / "runs.csv").write_text(content)
    done = subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "compare_results.py"), str(a),
                           str(tmp_path / "b"), "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          check=False, env={"PYTHONPATH": str(ROOT / "workflow" / "scripts"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"compare: {tmp_path / 'b' / 'tables' / 'runs.csv'}{words.removeprefix('runs.csv')}")
    assert not (tmp_path / "out").exists()
