"""Our cells beside the thesis's Appendix A: the table, the rank agreement and the figure, read back."""
from pathlib import Path

import pandas as pd
import pytest
from dlbench.figures.thesis import thesis_figure
from dlbench.tables import thesis, thesis_definitions
from dlbench.tables.appendix import appendix
from dlbench.tables.runs import runs_table

from .test_tables import record

OURS = {"pytorch": 2000.0, "tensorflow": 3000.0, "caffe": 1000.0}

ROOT = Path(__file__).parents[3]


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
    # Ours over the thesis's one published value: our cell's estimate (the geometric mean) and interval over it
    pytorch = speed.loc["pytorch"]
    assert pytorch["thesis"] == 1448 and pytorch["ratio"] == pytest.approx((1980 * 2020) ** 0.5 / 1448)
    assert 1.05 < pytorch["ratio_low"] < pytorch["ratio"] < pytorch["ratio_high"] and pytorch["verdict"] == "faster"
    assert pd.isna(speed.loc["mxnet", "ratio_low"]) and speed.loc["mxnet", "verdict"].startswith("not resolved")
    assert speed.loc["caffe", "thesis"] == 572
    assert pd.isna(speed.loc["mxnet", "ratio"]) and speed.loc["mxnet", "ours"] == "unavailable: no MXNet here"
    words = speed.loc["pytorch", "apples_to_oranges"]
    assert "Test CPU 9000, 2 cores vs 2x Xeon E5-2630" in words
    assert "generated stand-in files vs the real dataset" in words
    assert "batch 64" not in words  # the thesis's LeNet batch too
    assert set(compared["metric"]) == {"train_speed"}  # no GPU memory in CPU runs, no idle GPUs beside them
    ranks = thesis.rank_agreement(compared).set_index("metric")
    assert ranks.loc["train_speed", "frameworks"] == 3 and ranks.loc["train_speed", "spearman"] == pytest.approx(0.5)
    assert ranks.loc["train_speed", "swapped"] == "pytorch < tensorflow" and not ranks.loc["train_speed", "same_order"]
    assert ranks.loc["train_speed", "not_resolved"] == ""
    runs.to_csv(tmp_path / "runs.csv", index=False)
    appendix(runs).to_csv(tmp_path / "appendix.csv", index=False)
    thesis.write(*(tmp_path / name for name in ("appendix.csv", "runs.csv", "t.csv", "r.csv", "t.md", "a.md")))
    laid_out = thesis.appendix_a(compared).set_index(["Metric", "Dataset", "Network", "Framework"])
    assert len(laid_out) == 3 * 45 and list(laid_out.columns[:2]) == ["E5-2630 (12/20 cores): thesis",
                                                                      "E5-2630 (12/20 cores): ours"]
    lenet = laid_out.loc[("Average Training Speed (images per second)", "MNIST", "LeNet", "PyTorch")]
    assert (lenet["E5-2630 (12/20 cores): thesis"], lenet["E5-2630 (12/20 cores): ours"]) == ("1,448", "2,000")
    assert (lenet["2 GPU P100: thesis"], lenet["2 GPU P100: ours"]) == ("10,345", "—")
    assert laid_out.loc[("Average GPU Memory Usage (MiB)", "MNIST", "LeNet", "PyTorch"),
                        "E5-2630 (12/20 cores): thesis"] == "—"  # its 0: not measured on CPUs
    first_row = "| Average Training Speed (images per second) | MNIST     | LeNet     | Caffe"
    assert first_row in (tmp_path / "a.md").read_text()
    text = (tmp_path / "t.md").read_text()
    assert "1x Tesla P100" not in text and "2x Xeon E5-2630" in text and "pytorch < tensorflow" in text
    assert "## What still differs from the thesis's setup" in text and "TF 1.9, PyTorch 0.4" in text
    thesis_figure(pd.read_csv(tmp_path / "t.csv"), [tmp_path / "t.svg", tmp_path / "t.png"])
    svg = (tmp_path / "t.svg").read_text()
    assert all(f'id="point {f} mnist-generated lenet"' in svg for f in OURS) and 'id="point mxnet' not in svg
    assert "not measured here (unavailable:" in svg and "no MXNet here" in svg  # the notes (wrapped)


def test_only_pairs_the_repetitions_resolve_count_as_swaps_and_the_others_share_a_rank():
    """PyTorch 4,764 ± 763 against TensorFlow 4,987 ± 468 on MNIST LeNet: the thesis has PyTorch ahead, our runs
    cannot order the two, so nothing swapped; Caffe, resolved below both here and there, keeps the order."""
    speeds = {"pytorch": (4000.0, 4764.0, 5528.0), "tensorflow": (4519.0, 4987.0, 5455.0), "caffe": (900.0, 1000.0,
                                                                                                   1100.0)}
    items = [{**record(framework, repetition=r, speed=speed), "path": f"{framework}{r}"}
             for framework, values in speeds.items() for r, speed in enumerate(values, 1)]
    runs = runs_table(items)
    ranks = thesis.rank_agreement(thesis.comparison(appendix(runs), runs)).set_index("metric").loc["train_speed"]
    assert ranks["same_order"] and ranks["swapped"] == "" and ranks["not_resolved"] == "pytorch ~ tensorflow"
    # Our shared ranks (Caffe 1, the other two 2 and 2) against the thesis's three ranks
    assert ranks["spearman"] == pytest.approx(pd.Series([1, 2, 2]).corr(pd.Series([1, 2, 3]), method="spearman"))


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


def test_the_thesis_memory_and_power_stand_beside_ours_of_the_same_definition():
    """Its GPU memory and power are whole-run means of nvidia-smi's readings, its CPU runs' GPU power the idle
    cards' draw: each is set beside ours of that definition, one card's (as Appendix A's numbers say), never beside
    our peaks, timed-window means or sums over the GPUs."""
    cpu = record("pytorch")
    cpu["power"].update(idle_gpu_mean_w=62.0, idle_gpu_mean_w_per_gpu=[30.0, 32.0])
    on_gpus = record("pytorch", device="gpu2")
    on_gpus["memory"].update(gpu_process_peak_mib=900.0, gpu_device_mean_mib=680.0,
                             gpu_device_mean_mib_per_gpu=[400.0, 280.0])
    on_gpus["power"].update(gpu_mean_w=90.0, gpu_run_mean_w=60.0, gpu_run_mean_w_per_gpu=[35.0, 25.0])
    on_gpus["run"]["hardware"] = "p100"
    runs = runs_table([{**cpu, "path": "c"}, {**on_gpus, "path": "g"}])
    compared = thesis.comparison(appendix(runs), runs, thesis_gpus={"p100": "p100"}).set_index(["metric", "device"])
    assert sorted(compared.index) == [("gpu_memory_mean_per_gpu", "gpu2"), ("gpu_power_run_mean_per_gpu", "gpu2"),
                                      ("idle_gpu_power_per_gpu", "cpu"), ("train_speed", "cpu"),
                                      ("train_speed", "gpu2")]
    assert compared.loc[("idle_gpu_power_per_gpu", "cpu"), "thesis"] == 31  # PyTorch's CPU LeNet: an idle card's
    assert compared.loc[("idle_gpu_power_per_gpu", "cpu"), "ratio"] == pytest.approx(1.0)
    assert compared.loc[("gpu_memory_mean_per_gpu", "gpu2"), "ours_mean"] == pytest.approx(340)
    assert compared.loc[("gpu_power_run_mean_per_gpu", "gpu2"), "ours_mean"] == pytest.approx(30)
    assert compared.loc[("gpu_power_run_mean_per_gpu", "gpu2"), "thesis"] == 32  # 2x P100 LeNet
    assert "NVML read at measurement.sample_hz vs nvidia-smi at 1 Hz, both averaged over the whole run" in \
        compared.loc[("gpu_memory_mean_per_gpu", "gpu2"), "apples_to_oranges"]
    assert "NVML read at 1 Hz vs nvidia-smi at 1 Hz" in \
        compared.loc[("idle_gpu_power_per_gpu", "cpu"), "apples_to_oranges"]
    sums = appendix(runs).dropna(subset=["mean"]).set_index("metric")  # the sums stay in the appendix
    assert sums.loc["gpu_memory_mean", "mean"] == 680 and sums.loc["idle_gpu_power", "mean"] == 62
    text = thesis.markdown(compared.reset_index(), thesis.rank_agreement(compared.reset_index()))
    assert "## Our memory and power: which definition" in text and "`gpu_power_run_mean_per_gpu` (gpu_power)" in text


def reference_of(pairs: dict) -> pd.DataFrame:
    """An Appendix A in the thesis's names from {(metric, network): (1x_p100, 2x_p100)} (speed-up 1.5)."""
    rows = []
    for (metric, network), values in pairs.items():
        for hardware, value in zip(("1x_p100", "2x_p100"), values):
            rows.append({"metric": metric, "dataset": "CIFAR10", "network": network, "framework": "Caffe",
                         "hardware": hardware, "value": value})
            rows.append({"metric": "train_speed", "dataset": "CIFAR10", "network": network, "framework": "Caffe",
                         "hardware": hardware, "value": 100.0 * (1.5 if hardware[0] == "2" else 1)})
    return pd.DataFrame(rows).drop_duplicates()


def test_appendix_a_decides_between_one_card_and_the_sum_by_what_each_cannot_give():
    summed = reference_of({("gpu_power", "AlexNet"): (100, 180), ("gpu_power", "VGG16"): (100, 190),
                           ("gpu_memory", "AlexNet"): (500, 900), ("gpu_memory", "VGG16"): (500, 1100)})
    found = thesis_definitions.evidence(summed)
    assert thesis_definitions.decide(found) == {"gpu_memory": "sum", "gpu_power": "sum"}
    assert found.set_index(["metric", "refutes"]).loc[("gpu_memory", "mean"), "examples"] == \
        "CIFAR10 VGG16 Caffe: 500 → 1100"  # more than twice one card's
    one_card = reference_of({("gpu_power", "AlexNet"): (100, 90), ("gpu_memory", "AlexNet"): (500, 450)})
    found = thesis_definitions.evidence(one_card)
    assert thesis_definitions.decide(found) == {"gpu_memory": "mean", "gpu_power": "mean"}
    assert set(found[found["contradicting"] > 0]["refutes"]) == {"sum"}
    published = thesis_definitions.evidence(pd.read_csv(thesis.APPENDIX_A)).set_index(["metric", "refutes"])
    assert published.loc[("gpu_power", "sum"), "contradicting"].sum() > 0  # 2 GPUs below 1, and faster
    assert published.loc[("gpu_power", "mean"), "contradicting"].sum() == 0
    assert thesis_definitions.chosen(thesis.APPENDIX_A)["gpu_power"] == "mean"


def test_the_studies_page_lists_the_differences_from_the_thesiss_setup_that_thesis_md_lists():
    assert thesis.setup_differences() in (ROOT / "docs" / "studies.md").read_text(), (
        "docs/studies.md's thesis rows differ from tables/thesis.py's setup_difference_rows(); they should read:\n"
        + thesis.setup_differences())


def test_a_framework_s_thesis_release_stands_beside_the_thesis_apart_from_today_s():
    """CNTK 2.5.1 (config releases) beside the thesis's CNTK as today's 2.7 is, each its own row and release, ranked
    with the frameworks of its own release only; in Appendix A's layout both stand in CNTK's row, named."""
    items = [record(framework, repetition=1, speed=speed) for framework, speed in
             (("cntk", 1600.0), ("cntk-2.5", 1200.0), ("pytorch", 2000.0))]
    runs = runs_table([{**item, "path": item["run"]["framework"]} for item in items])
    assert dict(zip(runs["framework"], runs["release"])) == {"cntk": "current", "cntk-2.5": "thesis",
                                                             "pytorch": "current"}
    compared = thesis.comparison(appendix(runs), runs).query("metric == 'train_speed'").set_index("framework")
    assert compared.loc["cntk-2.5", "thesis"] == compared.loc["cntk", "thesis"] == 1573  # CNTK's CPU LeNet
    assert compared.loc["cntk-2.5", "release"] == "thesis"
    ranks = thesis.rank_agreement(compared.reset_index()).set_index("release")
    assert list(ranks.index) == ["current"] and ranks.loc["current", "frameworks"] == 2  # 2.5.1 ranked with none
    laid_out = thesis.appendix_a(compared.reset_index()).set_index(["Metric", "Dataset", "Network", "Framework"])
    cntk = laid_out.loc[("Average Training Speed (images per second)", "MNIST", "LeNet", "CNTK"),
                        "E5-2630 (12/20 cores): ours"]
    assert "1,200 (cntk-2.5)" in cntk and "1,600 (" in cntk


def test_thesis_md_names_the_releases_between_which_the_thesis_s_order_changed():
    """The thesis has PyTorch ahead of TensorFlow on the CPU's LeNet (1,448 against 818 images/s), and Caffe behind
    both. Planted here: TensorFlow three times faster from 2.16 on, PyTorch's line flat, Caffe (one release) five
    times PyTorch's speed. The reversed TensorFlow pair is named with the step that reversed it; Caffe's pairs, which
    no step resolves, say so; the releases between are ranked with no others."""
    speeds = (("pytorch-1.0", "1.0.0", 2000.0), ("pytorch", "2.13.0", 2000.0), ("tensorflow-1.9", "1.9.0", 1000.0),
              ("tensorflow-2.16", "2.16.2", 3000.0), ("tensorflow", "2.21.0", 3000.0), ("caffe", "1.0", 10000.0))
    items = []
    for framework, version, speed in speeds:
        for repetition, noise in enumerate((0.99, 1.0, 1.01), 1):
            item = record(framework, repetition=repetition, speed=speed * noise)
            item["run"]["framework_version"] = version
            items.append({**item, "path": f"{framework}{repetition}"})
    runs = runs_table(items)
    table = appendix(runs)
    compared = thesis.comparison(table, runs)
    ranks = thesis.rank_agreement(compared)
    assert set(ranks["release"]) == {"current", "thesis"}
    pairs = thesis.release_lines(thesis.release_points(table, runs))
    changes = thesis.order_changes(ranks, pairs).set_index("order")
    assert set(changes.index) == {"pytorch < tensorflow", "caffe > pytorch", "caffe > tensorflow"}
    assert changes.loc["pytorch < tensorflow", "changed"].startswith("tensorflow between 1.9.0 and 2.16.2: ×3 [")
    assert "also changed: backends/tensorflow_worker.py in a CPython 3.6 worker → backends/tensorflow.py" in (
        changes.loc["pytorch < tensorflow", "changed"])
    # TensorFlow's step up moved it towards Caffe, not past it: no step along either line reversed that pair
    assert set(changes.loc[["caffe > pytorch", "caffe > tensorflow"], "changed"]) == {
        "not resolved along the releases measured"}
    said = thesis.order_section(thesis.order_changes(ranks, pairs), lines_measured=True)
    assert "## Where the thesis's order changed" in said and "tensorflow between 1.9.0 and 2.16.2" in said
    assert thesis.order_section(changes.iloc[:0], lines_measured=False) == ""
