"""The release axis for real: .test/config-releases trains LeNet (every task) and the MLP in CNTK 2.7 and in the
thesis's CNTK 2.5.1, each in its own CPython 3.6 environment, through the same worker; in MXNet 1.9.1, in the thesis's
MXNet 1.2.0 and in 1.4.1 and 1.6.0 between them, in TensorFlow 2.21, the thesis's 1.9.0 and 2.16.2 and 2.18.1
between them (today's backend), and in PyTorch 2.13 and
PyPI's oldest, 1.0.0 (each old one in its worker on CPython 3.6); and seed 001's Keras: Keras 3 on TensorFlow 2.21,
Keras 2.2.4 on TensorFlow 1.9 and keras-mxnet on MXNet 1.2, the MLP through Keras's model.fit too; seed 002's raw
tf.nn network, inference alone, in TensorFlow 2.21 and in TF 1.9 (tests/workflow/test_release_lines.py: the lines
with their steps)."""
import json

import pandas as pd
import pytest
import yaml
from dlbench import registry

from ..conftest import ROOT, framework_environment
from .test_workflow import snakemake


@pytest.mark.slow
def test_each_framework_runs_at_today_s_release_and_at_the_thesis_s_side_by_side(tmp_path, cntk_worker_python):
    config = yaml.safe_load((ROOT / ".test" / "config-releases" / "config.yaml").read_text())
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for environment in ("cntk", "cntk-2.5", "mxnet", "mxnet-1.2", "mxnet-1.4", "mxnet-1.6", "tensorflow",
                        "tensorflow-1.9", "tensorflow-2.16", "tensorflow-2.18", "pytorch",
                        "pytorch-1.0"):  # built once per machine, as the job builds them
        (tmp_path / ".venvs" / environment).mkdir(parents=True)
        (tmp_path / ".venvs" / environment / "environment.json").write_text(
            json.dumps(framework_environment(environment)))
    snakemake(tmp_path)
    records = [json.loads(path.read_text()) for path in sorted((tmp_path / "results" / "runs").rglob("rep*.json"))]
    # (four frameworks x two releases, MXNet's and TensorFlow's two between each, and three Keras) x (LeNet's four
    # tasks, the MLP's training); the MLP's fit; the raw-op LeNet's inference at both releases
    assert len(records) == 15 * 5 + 3 + 2
    for record in records:
        run = record["run"]
        if run["framework"] in ("keras2-mxnet", "pytorch-1.0", "mxnet-1.4", "mxnet-1.6") and run["task"] == "profile":
            assert record["status"] == "unavailable"
            assert record["reason"] == (f"profile: {run['framework']} runs train, inference, accuracy only "
                                        f"({registry.REGISTRY[run['framework']].not_yet['profile']})")
            continue
        assert record["status"] == "ok", (run["framework"], run["task"], record["reason"])
    versions = {record["run"]["framework"]: record["run"]["framework_version"] for record in records}
    assert versions["cntk-2.5"] == "2.5.1" and versions["cntk"].startswith("2.7")
    assert versions["mxnet-1.2"] == "1.2.0" and versions["mxnet"] == "1.9.1"
    assert versions["mxnet-1.4"] == "1.4.1" and versions["mxnet-1.6"] == "1.6.0"
    assert versions["tensorflow-2.16"] == "2.16.2" and versions["tensorflow-2.18"] == "2.18.1"
    assert versions["tensorflow-1.9"] == "1.9.0" and versions["tensorflow"].startswith("2.")
    assert versions["pytorch-1.0"] == "1.0.0" and versions["pytorch"].startswith("2.")
    assert versions["keras2-tensorflow"] == "2.2.4" and versions["keras2-mxnet"] == "2.2.4.3"
    assert versions["keras-tensorflow"].startswith("3.")
    pairs = {("cntk", "current"), ("cntk-2.5", "thesis"), ("mxnet", "current"), ("mxnet-1.2", "thesis"),
             ("mxnet-1.4", "between"), ("mxnet-1.6", "between"), ("tensorflow-2.16", "between"),
             ("tensorflow-2.18", "between"),
             ("tensorflow", "current"), ("tensorflow-1.9", "thesis"), ("pytorch", "current"), ("pytorch-1.0", "thesis")}
    keras = {("keras-tensorflow", "current"), ("keras2-tensorflow", "thesis"), ("keras2-mxnet", "thesis")}
    raw = {("tensorflow-nn", "current"), ("tensorflow-nn-1.9", "thesis")}
    runs = pd.read_csv(tmp_path / "results" / "tables" / "runs.csv")
    assert set(zip(runs["framework"], runs["release"])) == pairs | keras | raw
    appendix = pd.read_csv(tmp_path / "results" / "tables" / "appendix.csv")
    speed = appendix.query("metric == 'train_speed' and task == 'train' and network == 'lenet'")
    assert sorted(speed["framework"]) == sorted(name for name, _ in pairs | keras) and (speed["n"] == 1).all()
    # seed 001's table: each Keras beside the framework it runs on, at its release; model.fit beside the native loop
    cost = pd.read_csv(tmp_path / "results" / "tables" / "api_cost.csv").query("network == 'lenet' or "
                                                                               "variant == 'fp32-fit'")
    peers = {(row.framework, row.variant): row.runs_on for row in cost.itertuples() if row.framework in
             {name for name, _ in keras | raw}}
    assert peers == {("keras-tensorflow", "fp32"): "tensorflow", ("keras2-tensorflow", "fp32"): "tensorflow-1.9",
                     ("keras2-mxnet", "fp32"): "mxnet-1.2", ("keras-tensorflow", "fp32-fit"): "tensorflow",
                     ("keras2-tensorflow", "fp32-fit"): "tensorflow-1.9", ("keras2-mxnet", "fp32-fit"): "mxnet-1.2",
                     ("tensorflow-nn", "fp32"): "tensorflow", ("tensorflow-nn-1.9", "fp32"): "tensorflow-1.9"}
    assert (cost[cost["framework"].isin([name for name, _ in keras])]["train_speed train ratio"] > 0).all()
    assert (cost[cost["framework"].isin([name for name, _ in raw])]["inference_speed inference ratio"] > 0).all()
    # each line from the thesis's release to today's; one run each: no interval, so no step called
    lines = pd.read_csv(tmp_path / "results" / "tables" / "release_lines.csv", dtype={"before": str, "after": str})
    lenet = lines.query("network == 'lenet' and task == 'train'")
    assert set(zip(lenet["framework"], lenet["before"], lenet["after"])) == {
        ("cntk", "2.5.1", versions["cntk"]), ("mxnet", "1.2.0", "1.4.1"), ("mxnet", "1.4.1", "1.6.0"),
        ("mxnet", "1.6.0", "1.9.1"), ("tensorflow", "1.9.0", "2.16.2"), ("tensorflow", "2.16.2", "2.18.1"),
        ("tensorflow", "2.18.1", versions["tensorflow"]), ("pytorch", "1.0.0", versions["pytorch"]),
        ("keras-tensorflow", "2.2.4", versions["keras-tensorflow"])}
    assert not lenet["step"].any() and (tmp_path / "results" / "tables" / "regressions.md").exists()
    beside = pd.read_csv(tmp_path / "results" / "tables" / "thesis.csv").query("metric == 'train_speed'")
    assert set(zip(beside["framework"], beside["release"])) == pairs
    thesis = dict(zip(beside["framework"], beside["thesis"]))  # each CPU LeNet in Appendix A, beside both releases
    assert (thesis["cntk"], thesis["cntk-2.5"], thesis["mxnet"], thesis["mxnet-1.2"]) == (1573, 1573, 1000, 1000)
    assert thesis["tensorflow"] == thesis["tensorflow-1.9"] == 818
    assert thesis["pytorch"] == thesis["pytorch-1.0"] == 1448
