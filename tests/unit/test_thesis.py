"""Our cells beside the thesis's Appendix A: the table, the rank agreement and the figure, read back."""
import pandas as pd
import pytest
from dlbench.figures.thesis import thesis_figure
from dlbench.tables import thesis
from dlbench.tables.appendix import appendix
from dlbench.tables.runs import runs_table

from .test_tables import record

OURS = {"pytorch": 2000.0, "tensorflow": 3000.0, "caffe": 1000.0}


@pytest.fixture
def runs():
    records = []
    for framework, speed in OURS.items():
        for repetition, jitter in ((1, 0.99), (2, 1.01)):
            item = record(framework, repetition=repetition, speed=speed * jitter)
            item["provenance"]["cpu_model"] = "Test CPU 9000"
            records.append({**item, "path": f"{framework}{repetition}"})
    unavailable = record("mxnet", status="unavailable", reason="no MXNet here")
    unavailable["provenance"]["cpu_model"] = "Test CPU 9000"
    keras = record("keras-torch", speed=500.0)  # not one of the thesis's frameworks
    return runs_table([*records, {**unavailable, "path": "m"}, {**keras, "path": "k"}])


def test_each_cell_stands_beside_the_thesis_with_what_differs(runs, tmp_path):
    compared = thesis.comparison(appendix(runs), runs)
    speed = compared[compared["metric"] == "train_speed"].set_index("framework")
    assert set(speed.index) == {"pytorch", "tensorflow", "caffe", "mxnet"}  # keras-torch: not in the thesis
    assert set(speed["thesis_hardware"]) == {"cpu_e5-2630_12or20cores"}
    assert speed.loc["pytorch", "thesis"] == 1448 and speed.loc["pytorch", "ratio"] == pytest.approx(2000 / 1448)
    assert speed.loc["caffe", "thesis"] == 572
    assert pd.isna(speed.loc["mxnet", "ratio"]) and speed.loc["mxnet", "ours"] == "unavailable: no MXNet here"
    words = speed.loc["pytorch", "apples_to_oranges"]
    assert "Test CPU 9000, 2 cores vs 2x Xeon E5-2630" in words
    assert "generated stand-in files vs the real dataset" in words
    assert "batch 64" not in words  # the thesis's LeNet batch too
    assert set(compared["metric"]) == {"train_speed"}  # neither side has a CPU run's GPU memory
    ranks = thesis.rank_agreement(compared).set_index("metric")
    assert ranks.loc["train_speed", "frameworks"] == 3 and ranks.loc["train_speed", "spearman"] == pytest.approx(0.5)
    assert ranks.loc["train_speed", "swapped"] == "pytorch < tensorflow" and not ranks.loc["train_speed", "same_order"]
    runs.to_csv(tmp_path / "runs.csv", index=False)
    appendix(runs).to_csv(tmp_path / "appendix.csv", index=False)
    thesis.write(*(tmp_path / name for name in ("appendix.csv", "runs.csv", "t.csv", "r.csv", "t.md")))
    text = (tmp_path / "t.md").read_text()
    assert "1x Tesla P100" not in text and "2x Xeon E5-2630" in text and "pytorch < tensorflow" in text
    thesis_figure(pd.read_csv(tmp_path / "t.csv"), [tmp_path / "t.svg", tmp_path / "t.png"])
    svg = (tmp_path / "t.svg").read_text()
    assert all(f'id="point {f} mnist-generated lenet"' in svg for f in OURS) and 'id="point mxnet' not in svg
    assert "not measured here (unavailable:" in svg and "no MXNet here" in svg  # the notes (wrapped)


def test_a_config_the_thesis_never_ran_still_gets_its_table_and_figure(tmp_path):
    runs = runs_table([{**record("keras-jax"), "path": "k"}])
    compared = thesis.comparison(appendix(runs), runs)
    assert compared.empty and "No cell of this config" in thesis.markdown(compared, thesis.rank_agreement(compared))
    thesis_figure(compared, [tmp_path / "t.png"])
    assert (tmp_path / "t.png").stat().st_size > 1000



def test_a_gpu_target_is_set_beside_the_thesis_gpu_it_names():
    items = []
    for target in ("p100", "h100"):
        item = record("pytorch", device="gpu1", speed=4000.0)
        item["run"]["hardware"] = target
        items.append({**item, "path": target})
    runs = runs_table(items)
    compared = thesis.comparison(appendix(runs), runs, thesis_gpus={"p100": "p100"})
    speed = compared[compared["metric"] == "train_speed"]
    assert list(speed[speed["hardware"] == "p100"]["thesis_hardware"]) == ["1x_p100"]
    unnamed = speed[speed["hardware"] == "h100"]
    assert set(unnamed["thesis_hardware"]) == {"1x_p100", "1x_k20m"}
    assert all("target h100 names no thesis GPU (hardware[].thesis)" in words
               for words in unnamed["apples_to_oranges"])
