"""The release axis for real: .test/config-releases trains LeNet (every task) and the MLP in CNTK 2.7 and in the
thesis's CNTK 2.5.1, each in its own CPython 3.6 environment, through the same worker; and in MXNet 1.9.1 and in the
thesis's MXNet 1.2.0 (its worker on CPython 3.6)."""
import json

import pandas as pd
import pytest
import yaml

from ..conftest import ROOT, framework_environment
from .test_workflow import snakemake


@pytest.mark.slow
def test_each_framework_runs_at_today_s_release_and_at_the_thesis_s_side_by_side(tmp_path, cntk_worker_python):
    config = yaml.safe_load((ROOT / ".test" / "config-releases" / "config.yaml").read_text())
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for environment in ("cntk", "cntk-2.5", "mxnet", "mxnet-1.2"):  # built once per machine, as framework_venv does
        (tmp_path / ".venvs" / environment).mkdir(parents=True)
        (tmp_path / ".venvs" / environment / "environment.json").write_text(
            json.dumps(framework_environment(environment)))
    snakemake(tmp_path)
    records = [json.loads(path.read_text()) for path in sorted((tmp_path / "results" / "runs").rglob("rep*.json"))]
    assert len(records) == 4 * 5  # two frameworks x two releases x (LeNet's four tasks, the MLP's training)
    for record in records:
        run = record["run"]
        if (run["framework"], run["task"]) == ("mxnet-1.2", "profile"):
            assert record["status"] == "unavailable"
            assert record["reason"] == ("profile: mxnet-1.2 runs train, inference, accuracy only (MXNet 1.2's profiler "
                                        "output is not read yet)")
            continue
        assert record["status"] == "ok", (run["framework"], run["task"], record["reason"])
    versions = {record["run"]["framework"]: record["run"]["framework_version"] for record in records}
    assert versions["cntk-2.5"] == "2.5.1" and versions["cntk"].startswith("2.7")
    assert versions["mxnet-1.2"] == "1.2.0" and versions["mxnet"] == "1.9.1"
    pairs = {("cntk", "current"), ("cntk-2.5", "thesis"), ("mxnet", "current"), ("mxnet-1.2", "thesis")}
    runs = pd.read_csv(tmp_path / "results" / "tables" / "runs.csv")
    assert set(zip(runs["framework"], runs["release"])) == pairs
    appendix = pd.read_csv(tmp_path / "results" / "tables" / "appendix.csv")
    speed = appendix.query("metric == 'train_speed' and task == 'train' and network == 'lenet'")
    assert sorted(speed["framework"]) == ["cntk", "cntk-2.5", "mxnet", "mxnet-1.2"] and (speed["n"] == 1).all()
    beside = pd.read_csv(tmp_path / "results" / "tables" / "thesis.csv").query("metric == 'train_speed'")
    assert set(zip(beside["framework"], beside["release"])) == pairs
    thesis = dict(zip(beside["framework"], beside["thesis"]))  # each CPU LeNet in Appendix A, beside both releases
    assert (thesis["cntk"], thesis["cntk-2.5"], thesis["mxnet"], thesis["mxnet-1.2"]) == (1573, 1573, 1000, 1000)
