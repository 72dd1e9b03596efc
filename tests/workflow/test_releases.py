"""The release axis for real: .test/config-releases trains LeNet (every task) and the MLP in CNTK 2.7 and in the
thesis's CNTK 2.5.1, each in its own CPython 3.6 environment, through the same worker."""
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
    for environment in ("cntk", "cntk-2.5"):  # built once per machine, as the framework_venv job builds them
        (tmp_path / ".venvs" / environment).mkdir(parents=True)
        (tmp_path / ".venvs" / environment / "environment.json").write_text(
            json.dumps(framework_environment(environment)))
    snakemake(tmp_path)
    records = [json.loads(path.read_text()) for path in sorted((tmp_path / "results" / "runs").rglob("rep*.json"))]
    assert len(records) == 2 * 5  # two releases x (LeNet's four tasks, the MLP's training)
    for record in records:
        assert record["status"] == "ok", (record["run"]["framework"], record["run"]["task"], record["reason"])
    versions = {record["run"]["framework"]: record["run"]["framework_version"] for record in records}
    assert versions["cntk-2.5"] == "2.5.1" and versions["cntk"].startswith("2.7")
    runs = pd.read_csv(tmp_path / "results" / "tables" / "runs.csv")
    assert set(zip(runs["framework"], runs["release"])) == {("cntk", "current"), ("cntk-2.5", "thesis")}
    appendix = pd.read_csv(tmp_path / "results" / "tables" / "appendix.csv")
    speed = appendix.query("metric == 'train_speed' and task == 'train' and network == 'lenet'")
    assert sorted(speed["framework"]) == ["cntk", "cntk-2.5"] and (speed["n"] == 1).all()  # two cells, never one
    beside = pd.read_csv(tmp_path / "results" / "tables" / "thesis.csv").query("metric == 'train_speed'")
    assert set(zip(beside["framework"], beside["release"])) == {("cntk", "current"), ("cntk-2.5", "thesis")}
    assert (beside["thesis"] == 1573).all()  # CNTK's CPU LeNet in Appendix A, beside both releases
