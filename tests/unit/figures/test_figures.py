"""The figures a reader looks at before the tables: heatmap, scaling, every step's time, memory side by side."""
import re

import pytest
from dlbench import metrics
from dlbench.figures.heatmap import heatmap
from dlbench.figures.iterations import iteration_times
from dlbench.figures.scaling import scaling_figure
from dlbench.tables.appendix import appendix, gpu_over_cpu, scale, scaling
from dlbench.tables.runs import runs_table

from ..tables.test_tables import figure, record


def speed_runs():
    """LeNet's training speed in three frameworks (TensorFlow fastest, Caffe a third of it) and MXNet's none."""
    records = [{**record(framework, repetition=r, speed=speed), "path": f"{framework}{r}"}
               for framework, speed in (("pytorch", 2000.0), ("tensorflow", 3000.0), ("caffe", 1000.0)) for r in (1, 2)]
    records.append({**record("mxnet", status="unavailable", reason="no MXNet here"), "path": "m"})
    return runs_table(records)


def test_the_heatmap_shows_speed_over_the_fastest_and_marks_missing_cells(tmp_path):
    heatmap(appendix(speed_runs()), "mnist-generated", "train_speed", [tmp_path / "h.svg"])
    svg = (tmp_path / "h.svg").read_text()
    assert 'id="heat tensorflow lenet cpu"' in svg and 'id="heat mxnet lenet cpu"' in svg
    # the fastest resolved above the others (two runs each, no spread): best; Caffe a third of it; the status where
    # nothing was measured
    for words in ("best", "0.33", "unavailable"):
        assert words in svg


def test_the_heatmap_names_no_best_the_repetitions_do_not_resolve(tmp_path):
    """PyTorch 1.00 and TensorFlow 0.99 on CIFAR10 AlexNet, from 125 ± 1 and 123 ± 4: no best, TensorFlow ≈."""
    records = [{**record(framework, repetition=r, speed=speed), "path": f"{framework}{r}"}
               for framework, speeds in (("pytorch", (124.0, 125.0, 126.0)), ("tensorflow", (119.0, 123.0, 127.0)),
                                         ("caffe", (60.0, 61.0, 62.0)))
               for r, speed in enumerate(speeds, 1)]
    heatmap(appendix(runs_table(records)), "mnist-generated", "train_speed", [tmp_path / "h.svg"])
    said = dict(re.findall(r'<g id="heat (\w+) lenet cpu">\s*<!-- (.*?) -->', (tmp_path / "h.svg").read_text()))
    assert said == {"pytorch": "1.00", "tensorflow": "≈0.98", "caffe": "0.49"}


def gpu_record(framework, device, speed, repetition=1, process_mib=None, allocator_mib=None, joules_per_image=None):
    item = record(framework, device=device, repetition=repetition, speed=speed)
    item["memory"].update(gpu_process_peak_mib=process_mib, framework_allocator_peak_mib=allocator_mib, reasons={})
    item["power"].update(energy_per_image_j=joules_per_image, reasons={} if joules_per_image else {
        "energy_per_image_j": "no NVML energy counter"})
    return {**item, "path": f"{framework}-{device}-{repetition}"}


def test_the_energy_heatmap_sets_each_framework_against_the_one_that_took_least(tmp_path):
    records = [gpu_record("pytorch", "gpu1", 1000.0, r, joules_per_image=0.02) for r in (1, 2)]
    records += [gpu_record("tensorflow", "gpu1", 800.0, r, joules_per_image=0.08) for r in (1, 2)]
    records += [gpu_record("mxnet", "gpu1", 900.0), gpu_record("pytorch", "cpu", 100.0)]
    heatmap(appendix(runs_table(records)), "mnist-generated", "gpu_energy_per_image",
                  [tmp_path / "e.svg"])
    svg = (tmp_path / "e.svg").read_text()
    # PyTorch took the least (best: resolved), TensorFlow four times as much (0.25); MXNet measured none
    assert all(words in svg for words in ("best", "0.25", "unavailable"))
    assert 'id="heat mxnet lenet gpu1"' in svg and 'id="heat pytorch lenet cpu"' not in svg  # no CPU panel


def test_scaling_sets_several_devices_against_one():
    records = [gpu_record("pytorch", "gpu1", 1000.0), gpu_record("pytorch", "gpu2", 1800.0),
               gpu_record("mxnet", "gpu1", 1000.0), gpu_record("mxnet", "2xgpu1", 1500.0),
               gpu_record("caffe", "gpu2", 900.0)]  # no one-GPU run to set it against
    scaled = scaling(appendix(runs_table(records))).set_index(["framework", "device"])
    assert list(scaled.index) == [("mxnet", "2xgpu1"), ("pytorch", "gpu2")]
    assert scaled.loc[("pytorch", "gpu2"), "speedup"] == pytest.approx(1.8)
    assert scaled.loc[("mxnet", "2xgpu1"), "efficiency"] == pytest.approx(0.75)
    assert scale("2xcpu") == ("cpu", 2) and scale("gpu4") == ("gpu1", 4)


def test_the_scaling_figure_draws_each_speedup_and_says_when_there_is_none(tmp_path):
    records = [gpu_record("pytorch", "gpu1", 1000.0), gpu_record("pytorch", "gpu2", 1800.0)]
    table = appendix(runs_table(records))
    scaling_figure(table, "mnist-generated", [tmp_path / "s.svg"])
    svg = (tmp_path / "s.svg").read_text()
    assert 'id="speedup pytorch lenet gpu2 over gpu1"' in svg and "90%" in svg and "<pattern" not in svg  # no hatch
    scaling_figure(table[table["device"] == "gpu1"], "mnist-generated", [tmp_path / "none.svg"])
    assert "No framework ran" in (tmp_path / "none.svg").read_text()


def test_a_speed_up_over_nodes_that_were_one_machine_is_flagged_not_passed_off(tmp_path):
    """``2xcpu`` over two "nodes" that share one machine's kernel (the two-node test cluster): the cell says so,
    and its bar is hatched with the reason beneath the figure."""
    over_nodes = gpu_record("pytorch", "2xcpu", 1200.0)
    over_nodes["execution"].update(nodes=["dlnode1", "dlnode2"], nodes_share_machine=True)
    table = appendix(runs_table([gpu_record("pytorch", "cpu", 1000.0), over_nodes]))
    cell = table[(table["metric"] == "train_speed") & (table["device"] == "2xcpu")].iloc[0]
    assert cell["flags"] == "nodes on one machine 1/1" and cell["cell"].endswith("[nodes on one machine 1/1]")
    scaling_figure(table, "mnist-generated", [tmp_path / "s.svg"])
    svg = (tmp_path / "s.svg").read_text()
    assert 'id="speedup pytorch lenet 2xcpu over cpu"' in svg and "60%" in svg
    assert "hatched: pytorch lenet, 2xcpu over cpu: nodes on one machine 1/1" in svg and "<pattern" in svg


def on_target(item: dict, target: str, gpu_model: str | None = None) -> dict:
    item["run"]["hardware"] = target
    if gpu_model:
        item["provenance"]["gpus"] = [{"index": 0, "uuid": "GPU-0", "name": gpu_model, "driver": "550"}]
    return item


def test_a_gpu_is_set_against_a_cpu_its_own_target_s_first(tmp_path):
    """The thesis's "20x-30x from CPU to GPU": each target's one-GPU training speed over one CPU's, its own
    target's CPU where it ran the cell (a node's GPU over its CPU), else the first CPU target in the config's
    order; a framework without a CPU run has no bar."""
    records = [on_target(gpu_record("pytorch", "cpu", 40.0), "e5-12"),
               on_target(gpu_record("pytorch", "cpu", 50.0), "e5-20"),
               on_target(gpu_record("pytorch", "gpu1", 1000.0), "k20m", "Tesla K20m"),
               on_target(gpu_record("pytorch", "gpu1", 3000.0), "p100", "Tesla P100-PCIE-16GB"),
               on_target(gpu_record("pytorch", "cpu", 100.0), "p100"),
               on_target(gpu_record("mxnet", "gpu1", 900.0), "k20m", "Tesla K20m")]
    table = appendix(runs_table([{**item, "path": f"r{k}"} for k, item in enumerate(records)]))
    order = ["e5-20", "e5-12", "k20m", "p100"]
    over = gpu_over_cpu(table, order).set_index("hardware")
    assert list(over.index) == ["k20m", "p100"] and set(over["framework"]) == {"pytorch"}
    assert over.loc["k20m", "baseline"] == "e5-20: cpu" and over.loc["k20m", "speedup"] == pytest.approx(20.0)
    assert over.loc["p100", "baseline"] == "p100: cpu" and over.loc["p100", "speedup"] == pytest.approx(30.0)
    assert gpu_over_cpu(table).loc[0, "baseline"] == "e5-12: cpu"  # no order given: by name
    scaling_figure(table, "mnist-generated", [tmp_path / "s.svg"], order)
    svg = (tmp_path / "s.svg").read_text()
    assert 'id="speedup pytorch lenet k20m: gpu1 over e5-20: cpu"' in svg and "×20" in svg and "×30" in svg
    assert svg.index("k20m: gpu1 over e5-20: cpu") < svg.index("p100: gpu1 over p100: cpu")


def test_gpu_memory_shows_the_allocator_peak_beside_the_process_peak(tmp_path):
    records = [gpu_record("pytorch", "gpu1", 1000.0, r, process_mib=900.0, allocator_mib=300.0) for r in (1, 2)]
    records += [gpu_record("tensorflow", "gpu1", 1000.0, r, process_mib=2000.0) for r in (1, 2)]
    records[-1]["memory"]["reasons"] = records[-2]["memory"]["reasons"] = {
        "framework_allocator_peak_mib": "not reported"}
    figure(records, "gpu_memory", [tmp_path / "m.svg"])
    svg = (tmp_path / "m.svg").read_text()
    assert 'id="bar pytorch gpu1"' in svg and 'id="beside pytorch gpu1"' in svg
    assert 'id="bar tensorflow gpu1"' in svg and 'id="beside tensorflow gpu1"' not in svg
    assert not metrics.drawn("allocator_memory", ["train"], ["gpu1"], rapl=True)  # it is in gpu_memory's figure
    table = appendix(runs_table(records)).set_index(["metric", "framework"])
    assert table.loc[("allocator_memory", "pytorch"), "mean"] == 300.0


def test_every_step_is_drawn_with_the_warmup_shaded(tmp_path):
    records = [{**record(framework, repetition=r), "path": f"{framework}{r}"} for framework in ("pytorch", "caffe")
               for r in (1, 2)]
    records[0]["timing"]["iteration_seconds"] = [2.0] + [0.1] * 19  # a first step that compiled
    records.append({**record("cntk", status="unavailable", reason="no CNTK here"), "path": "c"})
    records[-1]["timing"]["iteration_seconds"] = []
    iteration_times(records, [tmp_path / "t.svg", tmp_path / "t.png"])
    svg = (tmp_path / "t.svg").read_text()
    assert all(f'id="steps {f} cpu rep {r}"' in svg for f in ("pytorch", "caffe") for r in (1, 2))
    assert "no CNTK here" in svg


def test_every_framework_has_a_colour_of_its_own_in_every_figure():
    from dlbench.figures import FRAMEWORK_COLOURS
    from dlbench.registry import REGISTRY

    assert list(FRAMEWORK_COLOURS) == list(REGISTRY)
    colours = list(FRAMEWORK_COLOURS.values())
    # apart in RGB (tab20's strong ten, then the farthest of seaborn's palettes: 0.26 apart for 20 frameworks; tab10's
    # eleventh colour is its first: 0)
    assert min(sum((a - b) ** 2 for a, b in zip(one, other)) ** 0.5
               for index, one in enumerate(colours) for other in colours[index + 1:]) > 0.2
