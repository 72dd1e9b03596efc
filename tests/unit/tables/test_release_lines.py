"""Steps along a release line: one release planted 30 % slower is named with its releases and interval; a line
without a step names none."""
import pandas as pd
import pytest
from dlbench.figures.release_lines import release_lines_figure
from dlbench.tables.appendix import appendix
from dlbench.tables.release_lines import markdown, release_lines, release_points, write
from dlbench.tables.runs import runs_table

from ...conftest import svg_text
from .test_tables import record

# MXNet's line, as the registry names its releases (the thesis's mxnet-1.2, mxnet-1.4 and mxnet-1.6 between, today's
# mxnet); today's given as 1.10, which comes after 1.6 and which a number read from runs.csv would make 1.1
LINE = (("mxnet-1.2", "1.2.0"), ("mxnet-1.4", "1.4.1"), ("mxnet-1.6", "1.6.0"), ("mxnet", "1.10"))
NOISE = (0.99, 1.0, 1.01)  # three repetitions a percent apart


def line_records(speeds: dict[str, float], network: str = "lenet") -> list[dict]:
    records = []
    for (framework, version), noise in ((release, noise) for release in LINE for noise in NOISE):
        made = record(framework, repetition=NOISE.index(noise) + 1, speed=speeds[version] * noise)
        made["run"].update(framework_version=version, network=network)
        records.append({**made, "path": f"{framework}-{network}-{noise}"})
    return records


def pairs_of(records: list[dict]) -> pd.DataFrame:
    runs = runs_table(records)
    return release_lines(release_points(appendix(runs), runs))


def test_a_release_planted_thirty_percent_slower_is_named_with_its_releases_and_interval():
    pairs = pairs_of(line_records({"1.2.0": 500.0, "1.4.1": 500.0, "1.6.0": 350.0, "1.10": 350.0}))
    assert list(zip(pairs["before"], pairs["after"])) == [("1.2.0", "1.4.1"), ("1.4.1", "1.6.0"), ("1.6.0", "1.10")]
    steps = pairs[pairs["step"]]
    assert list(zip(steps["before"], steps["after"])) == [("1.4.1", "1.6.0")]
    step = steps.iloc[0]
    assert step["framework"] == "mxnet" and step["verdict"] == "slower"
    assert step["ratio"] == pytest.approx(0.7) and step["ratio_low"] < 0.7 < step["ratio_high"] < 0.95
    # the thesis's worker ran the three older releases; today's backend, in the runner's process, ran 1.10
    assert list(pairs["also_changed"].fillna("")) == [
        "", "", "backends/mxnet_worker.py in a CPython 3.6 worker → backends/mxnet.py"]
    said = markdown(pairs)
    assert "between 1.4.1 and 1.6.0: ×0.7 [" in said and "| slower" in said
    assert "between 1.2.0" not in said and "between 1.6.0" not in said


def test_a_line_without_a_step_names_none():
    pairs = pairs_of(line_records({"1.2.0": 500.0, "1.4.1": 502.0, "1.6.0": 498.0, "1.10": 501.0}))
    assert len(pairs) == 3 and not pairs["step"].any()
    assert set(pairs["verdict"]) == {"same"}
    assert "No step" in markdown(pairs)


def test_lines_of_one_release_make_no_pairs_and_each_cell_is_its_own_line(tmp_path):
    records = line_records({"1.2.0": 500.0, "1.4.1": 500.0, "1.6.0": 350.0, "1.10": 350.0})
    records += line_records({"1.2.0": 100.0, "1.4.1": 100.0, "1.6.0": 100.0, "1.10": 100.0}, network="mlp")
    records += [{**record("pytorch", repetition=k), "path": f"pytorch{k}"} for k in (1, 2, 3)]  # one release
    runs = runs_table(records)
    appendix_csv, runs_csv = tmp_path / "appendix.csv", tmp_path / "runs.csv"
    appendix(runs).to_csv(appendix_csv, index=False)
    runs.to_csv(runs_csv, index=False)
    write(appendix_csv, runs_csv, tmp_path / "release_points.csv", tmp_path / "release_lines.csv",
          tmp_path / "regressions.md")
    pairs = pd.read_csv(tmp_path / "release_lines.csv", dtype={"before": str, "after": str})
    assert set(pairs["framework"]) == {"mxnet"} and len(pairs) == 6
    assert list(pairs[pairs["step"]]["network"]) == ["lenet"]
    assert "(6 pairs in 2 lines" in (tmp_path / "regressions.md").read_text()
    points = pd.read_csv(tmp_path / "release_points.csv", dtype={"version": str})
    assert list(points.query("network == 'lenet'")["version"]) == ["1.2.0", "1.4.1", "1.6.0", "1.10"]
    assert list(points.query("network == 'lenet'")["released"].fillna("")) == ["2018-05-21", "2019-05-14", "2020-02-21",
                                                                           "2022-05-17"]


def test_the_figure_draws_each_line_with_its_versions_and_the_thesis_s_value_at_its_release(tmp_path):
    runs = runs_table(line_records({"1.2.0": 500.0, "1.4.1": 500.0, "1.6.0": 350.0, "1.10": 350.0}))
    points = release_points(appendix(runs), runs)
    thesis = pd.DataFrame([{"metric": "train_speed", "dataset": "mnist-generated", "network": "lenet",
                            "framework": "mxnet-1.2", "device": "cpu", "thesis": 1000.0}])
    outputs = [tmp_path / "release_lines.png", tmp_path / "release_lines.svg"]
    points.to_csv(tmp_path / "points.csv", index=False)  # as the figure's job reads it: an empty target is missing
    points = pd.read_csv(tmp_path / "points.csv", dtype={"version": str, "released": str})
    assert points["hardware"].isna().all()
    release_lines_figure(points, thesis, outputs)
    drawn = outputs[1].read_text()
    assert outputs[0].stat().st_size > 0 and 'id="thesis mxnet"' in drawn and 'id="line mxnet mnist-generated' in drawn
    assert all(version in svg_text(outputs[1]) for version in ("1.2.0", "1.4.1", "1.6.0", "1.10"))
    # the worker ran the three older releases, today's backend 1.10: that segment alone is dashed, and said
    assert 'id="same harness mxnet 1.2.0 1.4.1"' in drawn and 'id="same harness mxnet 1.4.1 1.6.0"' in drawn
    assert 'id="harness changed mxnet 1.6.0 1.10"' in drawn and "A dashed segment joins" in svg_text(outputs[1])
    release_lines_figure(points.iloc[:0], None, outputs)  # no line: said, not an empty plot
    assert "No framework ran at two releases or more" in svg_text(outputs[1])
