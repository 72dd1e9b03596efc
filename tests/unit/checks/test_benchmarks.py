"""The yardsticks: `make bench`'s verdicts on rounds, and every benchmark running under it.

The smoke run (tiny sizes, a minute) shows each benchmark still runs with the package as it is, so that an API
change that breaks one fails here; the numbers of such runs mean nothing, and say so (one round: unsteady)."""
import subprocess
import sys

import pandas as pd
import pytest
from dlbench.checks import bench

from ...conftest import ROOT


def _ratio(values, **sides) -> bench.Measurement:
    return bench.Measurement("b.py", "a ÷ b", "pytorch", "lenet/mnist", values, goal=">= 0.95", sides=sides)


def test_rounds_that_agree_give_a_figure_judged_against_its_goal():
    steady = _ratio([0.97, 0.98, 0.99, 0.98], a=[100, 101, 99, 100], b=[103, 102, 100, 102])
    row = bench.table_row(steady)
    assert (row["verdict"], row["goal_met"], row["median"]) == ("steady", "met", pytest.approx(0.98))
    assert bench.table_row(_ratio([0.90, 0.91, 0.90, 0.92]))["goal_met"] == "missed"


def test_rounds_that_disagree_are_unsteady_and_never_judged():
    # the input_pipeline run: LMDB 59.5 then 2,085 img/s, synthetic 61 then 1,343 img/s
    wild = _ratio([59.5 / 61, 2085 / 1343], LMDB=[59.5, 2085], synthetic=[61, 1343])
    row = bench.table_row(wild)
    assert row["verdict"].startswith("unsteady: the rounds' values spread 23% of the median")
    assert "LMDB's runs span 59.5–2085 (35.0x; at most 1.5x)" in row["verdict"]
    assert row["goal_met"] == "cannot tell (unsteady)"
    # a ratio that agrees while both sides' speed changed under it is not a figure either
    assert "synthetic's runs span" in bench.steadiness(_ratio([1.0, 1.0], LMDB=[60, 1300], synthetic=[60, 1300]))
    assert bench.steadiness(_ratio([0.98])) == "unsteady: one round, no spread to judge"


def test_a_harness_faster_than_its_bare_loop_is_a_bug_to_find_not_a_figure():
    overhead = bench.Measurement("framework_overhead", "harness ÷ bare loop", "pytorch", "case", [1.63, 1.62, 1.64],
                                 goal=">= 0.98", bound=1.0)
    row = bench.table_row(overhead)
    assert row["verdict"].startswith("implausible: 1.63 is over 1, the most it can be")
    assert row["goal_met"] == "cannot tell (implausible)"
    assert bench.steadiness(bench.Measurement("b", "q", "f", "c", [1.02, 1.03, 1.02], bound=1.0)) == "steady"


def test_a_share_is_judged_on_the_whole_not_its_median():
    waits = bench.Measurement("b.py", "input-wait share", "pytorch", "case", [0.004, 0.006, 0.005], share=True)
    assert bench.steadiness(waits) == "steady"
    assert bench.steadiness(bench.Measurement("b.py", "share", "pytorch", "case", [0.1, 0.5], share=True)) \
        .startswith("unsteady: the rounds' values spread 20% of the whole")


def test_every_benchmark_is_in_every_plan():
    scripts = sorted(path.name for path in (ROOT / "benchmarks").glob("*.py"))
    for plan, jobs in bench.PLANS.items():
        assert sorted({job.script for job in jobs}) == scripts, plan


@pytest.mark.slow
def test_make_bench_runs_every_benchmark_and_writes_its_table(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "bench.py"), "--plan", "smoke",
                           "--output", str(tmp_path / "benchmarks")], capture_output=True, text=True, check=False,
                          timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    table = pd.read_csv(tmp_path / "benchmarks.csv")
    assert set(table["benchmark"]) == {*(job.script.removesuffix(".py") for job in bench.PLANS["smoke"]),
                                       "ceiling (dlbench.run.matmul_peak)"}
    assert not table["verdict"].str.startswith("failed").any()
    # a share (of A/A cells called, of input waits, of a core taken by others) may honestly be 0; a speed may not
    shares = table["quantity"].str.contains("share")
    assert (table.loc[~shares, "median"] > 0).all() and table.loc[shares, "median"].between(0, 1).all()
    assert (table.loc[table["rounds"] == 1, "verdict"] == "unsteady: one round, no spread to judge").all()
    overhead = table[table["benchmark"] == "framework_overhead"]
    assert list(overhead["quantity"]) == ["harness ÷ bare loop (separate processes)",
                                          ("harness ÷ bare loop (one process, interleaved, the monitor sampling the "
                                          "harness's turns)"),
                                          ("harness without the monitor's sampler ÷ bare loop (one process, "
                                           "interleaved)"),
                                          ("harness in the timed loop ÷ its steps unclocked (one process, "
                                           "interleaved, no sampler)")]
    assert list(overhead["goal"].fillna("")) == [">= 0.98", ">= 0.98", "", ""]  # the splits have no goal of their own
    assert (tmp_path / "benchmarks.md").read_text().startswith("# Benchmarks (smoke plan)")
    assert len(list((tmp_path / "benchmarks.logs").glob("*.log"))) == len(bench.PLANS["smoke"])


def test_a_benchmark_finds_the_framework_environment_the_workflow_built_or_shared(tmp_path, monkeypatch):
    """make bench runs a framework in the environment the workflow's job recorded, else in the one built under the
    machine's shared root from the checkout's requirements file; neither built: none, and the job to build it."""
    from dlbench import envs

    monkeypatch.setattr(envs, "node_gpus", list)
    monkeypatch.setattr(envs, "framework_build", lambda status, environment: {"framework_build": "cpu"})

    def build_venv(requirements, venv_dir, log, base_python=None, after_install=None):  # pip's part, in a second
        (venv_dir / "bin").mkdir(parents=True)
        (venv_dir / "bin" / "python").write_text("")
        return {"status": "ok", "python": str(venv_dir / "bin" / "python"), "reason": "", "packages": []}
    monkeypatch.setattr(envs, "build_venv", build_venv)
    checkout, root = tmp_path / "checkout", tmp_path / "shared"
    (checkout / "envs").mkdir(parents=True)
    (checkout / "envs" / "mxnet.requirements.txt").write_text("# nothing to install\n")
    monkeypatch.setenv(envs.SHARED_ROOT_VARIABLE, str(root))
    assert bench.built_environment("mxnet", checkout) is None
    with open(tmp_path / "build.log", "w") as log:
        shared = envs.build_environment(checkout / "envs" / "mxnet.requirements.txt", tmp_path / "other" / "mxnet", 1,
                                        log, gpus=[], shared_root=root)
    assert bench.built_environment("mxnet", checkout)["python"] == shared["python"]
    (checkout / "envs" / "mxnet.requirements.txt").write_text("# another build\n")
    assert bench.built_environment("mxnet", checkout) is None
    record = checkout / ".venvs" / "mxnet" / "environment.json"
    record.parent.mkdir(parents=True)
    record.write_text('{"status": "ok", "python": "/a/venv/bin/python", "reason": ""}')
    assert bench.built_environment("mxnet", checkout)["python"] == "/a/venv/bin/python"
