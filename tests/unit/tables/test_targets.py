"""One hardware target over another (config compare_targets): the table, seed 003's layout and the figure, read
back; the config's pairs checked."""
import pandas as pd
import pytest
from dlbench.config import ConfigError, target_pairs
from dlbench.figures.targets import targets_figure
from dlbench.tables import accuracy, targets
from dlbench.tables.appendix import appendix
from dlbench.tables.runs import runs_table

from .test_tables import accuracy_record, on_gpus, on_target, record

GPUS = {"p100": ("Tesla P100-PCIE-16GB", 1.0), "k80": ("Tesla K80", 1.8)}  # the K80 takes 1.8 times as long


def accuracy_on(target: str, repetition: int, dataset: str) -> dict:
    model, slower = GPUS[target]
    item = on_target(on_gpus(accuracy_record(repetition=repetition, dataset=dataset, accuracies=(0.5, 0.8, 0.95)),
                             model), target)
    item["run"]["device"] = "gpu1"
    quality, timing = item["quality"], item["timing"]
    quality.update(total_seconds=quality["total_seconds"] * slower,
                   time_to_accuracy_seconds=quality["time_to_accuracy_seconds"] * slower)
    timing["images_per_second_mean"] /= slower
    return {**item, "path": f"{target}-{dataset}-{repetition}"}


@pytest.fixture
def runs() -> pd.DataFrame:
    items = [accuracy_on(target, r, dataset) for target in GPUS for r in (1, 2) for dataset in ("mnist", "cifar10")]
    only_p100 = on_target(on_gpus(record(device="gpu1", speed=900.0), "Tesla P100-PCIE-16GB"), "p100")
    return runs_table([*items, {**only_p100, "path": "train"}])


@pytest.fixture
def table(runs):
    return appendix(runs)


def test_each_cell_both_targets_ran_is_set_against_the_other_by_speed_and_by_time(table):
    found = targets.against(table, [("p100", "k80")]).set_index(["metric", "dataset"])
    assert set(found.index.get_level_values("metric")) == {"train_speed", "total_time", "time_to_accuracy"}
    assert found.loc[("total_time", "mnist"), "speedup"] == pytest.approx(1.8)  # the K80's seconds over the P100's
    assert found.loc[("train_speed", "cifar10"), "speedup"] == pytest.approx(1.8)  # the P100's images/s over the K80's
    assert found.loc[("total_time", "mnist"), "target_machine"] == "Tesla P100-PCIE-16GB"
    assert found.loc[("total_time", "mnist"), "baseline_machine"] == "Tesla K80"
    assert "mnist-generated" not in set(found.index.get_level_values("dataset"))  # the P100's training ran alone
    # Two runs a side without spread: the interval is the ratio itself, beyond the threshold, resolved
    assert (found["verdict"] == "faster").all() and found["speedup_text"].str.endswith("[1.8, 1.8]").all()
    reverse = targets.against(table, [("k80", "p100")])
    assert reverse["speedup"].to_numpy() == pytest.approx(1 / 1.8) and (reverse["verdict"] == "slower").all()


def test_the_accuracy_runs_stand_in_seed_003_s_layout_and_the_figure_draws_each_speed_up(runs, table, tmp_path):
    wide = accuracy.seed003_layout(table, "total_time", ["p100", "k80"])
    assert list(wide.columns) == ["framework", "network", "p100: gpu1 cifar10", "p100: gpu1 mnist",
                                  "k80: gpu1 cifar10", "k80: gpu1 mnist"]
    assert wide.iloc[0]["p100: gpu1 mnist"] == "3.30" and wide.iloc[0]["k80: gpu1 mnist"] == "5.94"
    assert accuracy.seed003_layout(table, "test_accuracy", ["p100", "k80"]).iloc[0]["k80: gpu1 cifar10"] == "95.00%"
    table.to_csv(tmp_path / "appendix.csv", index=False)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    accuracy.write_accuracy(tmp_path / "runs.csv", tmp_path / "appendix.csv", tmp_path / "a.csv", tmp_path / "a.md",
                            ["p100", "k80"])
    text = (tmp_path / "a.md").read_text()
    assert "## Time(s), in seed 003's layout" in text and "## Acc, in seed 003's layout" in text
    targets.write(tmp_path / "appendix.csv", tmp_path / "t.csv", tmp_path / "t.md", [("p100", "k80")])
    assert "# One hardware target over another (p100 over k80)" in (tmp_path / "t.md").read_text()
    assert "×1.8" in (tmp_path / "t.md").read_text()
    targets_figure(pd.read_csv(tmp_path / "t.csv"), [tmp_path / "t.svg", tmp_path / "t.png"])
    svg = (tmp_path / "t.svg").read_text()
    assert 'id="speedup pytorch mnist resnet18 total_time p100 k80"' in svg
    assert "p100 over k80, gpu1: total time (by time)" in svg


def test_a_pair_without_a_common_cell_says_so(tmp_path):
    empty = targets.against(appendix(runs_table([{**record(), "path": "a"}])), [("p100", "k80")])
    assert empty.empty
    targets_figure(empty, [tmp_path / "t.svg"])
    assert "No cell ran on both targets" in (tmp_path / "t.svg").read_text()


def test_the_config_s_pairs_name_two_of_its_targets_that_share_a_device():
    config = {"hardware": [{"name": "p100", "devices": ["gpu1"]}, {"name": "k80", "devices": ["gpu1", "gpu2"]},
                           {"name": "e5", "devices": ["cpu"]}]}
    names = ["p100", "k80", "e5"]
    assert target_pairs({**config, "compare_targets": [["p100", "k80"]]}, names) == [("p100", "k80")]
    with pytest.raises(ConfigError, match=r"compare_targets\[0\]: 'v100' is not a hardware target of this config; "
                                          "allowed: p100, k80, e5"):
        target_pairs({**config, "compare_targets": [["v100", "k80"]]}, names)
    with pytest.raises(ConfigError, match=r"p100 \(gpu1\) and e5 \(cpu\) share no device"):
        target_pairs({**config, "compare_targets": [["p100", "e5"]]}, names)
    with pytest.raises(ConfigError, match="against itself"):
        target_pairs({**config, "compare_targets": [["k80", "k80"]]}, names)
