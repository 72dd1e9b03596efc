"""Release lines for real: .test/config-release-lines trains LeNet along MXNet's line and TensorFlow's three times
a release, and the steps along them are named from those runs (a file of its own, so that the slow tier's two
workers can share the release tests)."""
import json

import pandas as pd
import pytest
import yaml

from ..conftest import ROOT, framework_environment
from .test_workflow import snakemake


@pytest.mark.slow
def test_the_mxnet_and_tensorflow_release_lines_are_measured_and_their_steps_named_from_real_runs(
        tmp_path, mxnet_1_2_worker_python):
    """.test/config-release-lines: LeNet along MXNet's line (1.2.0, 1.6.0, 1.9.1) and TensorFlow's (2.16.2, 2.21.0),
    three runs a release: every pair of consecutive releases with its interval, and regressions.md naming what the
    runs resolve."""
    config = yaml.safe_load((ROOT / ".test" / "config-release-lines" / "config.yaml").read_text())
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    for environment in ("mxnet", "mxnet-1.2", "mxnet-1.6", "tensorflow", "tensorflow-2.16"):
        (tmp_path / ".venvs" / environment).mkdir(parents=True)
        (tmp_path / ".venvs" / environment / "environment.json").write_text(
            json.dumps(framework_environment(environment)))
    snakemake(tmp_path)
    runs = pd.read_csv(tmp_path / "results" / "tables" / "runs.csv", dtype={"framework_version": str})
    assert (runs["status"] == "ok").all() and len(runs) == 15
    assert sorted(set(runs["framework_version"])) == ["1.2.0", "1.6.0", "1.9.1", "2.16.2", "2.21.0"]
    lines = pd.read_csv(tmp_path / "results" / "tables" / "release_lines.csv", dtype={"before": str, "after": str})
    assert sorted(zip(lines["before"], lines["after"])) == [("1.2.0", "1.6.0"), ("1.6.0", "1.9.1"),
                                                            ("2.16.2", "2.21.0")]
    assert (lines["ratio_low"] < lines["ratio"]).all() and (lines["ratio"] < lines["ratio_high"]).all()
    said = (tmp_path / "results" / "tables" / "regressions.md").read_text()
    assert "(3 pairs in 2 lines" in said
    assert all(f"between {row.before} and {row.after}: {row.ratio_text}" in said
               for row in lines.itertuples() if row.step)
    print(lines[["before", "after", "before_estimate", "after_estimate", "ratio_text", "verdict"]].to_string())
