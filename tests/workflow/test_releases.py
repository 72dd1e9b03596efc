"""The release axis for real: .test/config-releases trains LeNet (every task) and the MLP in CNTK 2.7 and in the
thesis's CNTK 2.5.1, each in its own CPython 3.6 environment, through the same worker; in MXNet 1.9.1 and in the
thesis's MXNet 1.2.0, and in TensorFlow 2.21 and the thesis's 1.9.0 (each old one in its worker on CPython 3.6)."""
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
    for environment in ("cntk", "cntk-2.5", "mxnet", "mxnet-1.2", "tensorflow",
                        "tensorflow-1.9"):  # built once per machine, as the framework_venv job builds them
        (tmp_path / ".venvs" / environment).mkdir(parents=True)
        (tmp_path / ".venvs" / environment / "environment.json").write_text(
            json.dumps(framework_environment(environment)))
    snakemake(tmp_path)
    records = [json.loads(path.read_text()) for path in sorted((tmp_path / "results" / "runs").rglob("rep*.json"))]
    assert len(records) == 6 * 5  # three frameworks x two releases x (LeNet's four tasks, the MLP's training)
    for record in records:
        run = record["run"]
        if run["framework"] == "mxnet-1.2" and run["task"] == "profile":
            assert record["status"] == "unavailable"
            assert record["reason"] == (f"profile: {run['framework']} runs train, inference, accuracy only "
                                        f"({registry.REGISTRY[run['framework']].not_yet['profile']})")
            continue
        assert record["status"] == "ok", (run["framework"], run["task"], record["reason"])
    versions = {record["run"]["framework"]: record["run"]["framework_version"] for record in records}
    assert versions["cntk-2.5"] == "2.5.1" and versions["cntk"].startswith("2.7")
    assert versions["mxnet-1.2"] == "1.2.0" and versions["mxnet"] == "1.9.1"
    assert versions["tensorflow-1.9"] == "1.9.0" and versions["tensorflow"].startswith("2.")
    pairs = {("cntk", "current"), ("cntk-2.5", "thesis"), ("mxnet", "current"), ("mxnet-1.2", "thesis"),
             ("tensorflow", "current"), ("tensorflow-1.9", "thesis")}
    runs = pd.read_csv(tmp_path / "results" / "tables" / "runs.csv")
    assert set(zip(runs["framework"], runs["release"])) == pairs
    appendix = pd.read_csv(tmp_path / "results" / "tables" / "appendix.csv")
    speed = appendix.query("metric == 'train_speed' and task == 'train' and network == 'lenet'")
    assert sorted(speed["framework"]) == sorted(name for name, _ in pairs) and (speed["n"] == 1).all()
    beside = pd.read_csv(tmp_path / "results" / "tables" / "thesis.csv").query("metric == 'train_speed'")
    assert set(zip(beside["framework"], beside["release"])) == pairs
    thesis = dict(zip(beside["framework"], beside["thesis"]))  # each CPU LeNet in Appendix A, beside both releases
    assert (thesis["cntk"], thesis["cntk-2.5"], thesis["mxnet"], thesis["mxnet-1.2"]) == (1573, 1573, 1000, 1000)
    assert thesis["tensorflow"] == thesis["tensorflow-1.9"] == 818
