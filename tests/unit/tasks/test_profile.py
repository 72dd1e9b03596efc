"""The profile task (seed 004): each layer's forward and backward time under the framework's own profiler,
named as the shared description names it; the profiler's overhead and the share no layer accounts for."""
import gzip
import os
import sys
from pathlib import Path

import jsonschema
import pytest
from dlbench import datasets, files, networks
from dlbench.backends import updates_found, xspace
from dlbench.config import cases
from dlbench.figures.layer_steps import block_seconds, layer_phases, layer_steps, unaccounted
from dlbench.figures.layers import layer_times
from dlbench.record.io import load_records, series_path, write_record
from dlbench.run import monitor
from dlbench.spec import RunSpec
from dlbench.tables.appendix import appendix
from dlbench.tables.layers import layer_means, layers_table
from dlbench.tables.runs import runs_table
from dlbench.tasks.profile import layer_profile

from ...conftest import ROOT, run_in
from ..test_config import validated


def _spec(**changes):
    fields = {"framework": "pytorch", "dataset": "cifar10-synthetic", "network": "alexnet", "device": "cpu",
              "repetition": 1, "batch_size_global": 8, "iterations": 6, "warmup_iterations": 2,
              "learning_rate": 0.01, "threads": 2, "task": "profile"}
    return RunSpec(**{**fields, **changes})


# The layer whose profiled forward takes a known time at least (tests/hooks/slowed_layer): AlexNet's cheapest, a ReLU;
# 0.1 s is over 30 times a convolution's forward here (3 ms), under load too
SLOW_LAYER, LAYER_SLEEP_S = "relu5", 0.1


@pytest.fixture(scope="module")
def profiled(tmp_path_factory):
    """A real profile run of AlexNet on CIFAR10-shaped batches in PyTorch, under the monitor, one layer slowed by a
    known interval while profiled."""
    path = tmp_path_factory.mktemp("profile") / "rep1.json"
    hooks = ROOT / "tests" / "hooks"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", os.pathsep.join([str(hooks / "slowed_layer"), str(hooks)]))
        patch.setenv("DLBENCH_TEST_SLOW_LAYER", SLOW_LAYER)
        patch.setenv("DLBENCH_TEST_LAYER_SLEEP_S", str(LAYER_SLEEP_S))
        record = monitor.run(_spec(), sys.executable, path.with_suffix(".log"), 300, 20, "sha",
                             series_at=series_path(path))
    write_record(record, path)
    return load_records([path])[0]


def test_the_series_beside_the_record_keep_every_profiled_step_and_every_sample(profiled):
    """The record's means are the kept steps' means; the samples are the monitor's, gzip-compressed JSON."""
    kept = files.read_json(series_path(Path(profiled["path"])))
    assert kept["run"] == profiled["run"]
    assert gzip.decompress(series_path(Path(profiled["path"])).read_bytes()).startswith(b"{")  # gzip-compressed
    steps = kept["profile"]
    assert steps["layers"] == [layer["name"] for layer in profiled["profile"]["layers"]]
    assert len(steps["iteration_seconds"]) == len(steps["forward_seconds"]) == profiled["profile"]["steps"] == 4
    for index, layer in enumerate(profiled["profile"]["layers"]):
        for phase in ("forward", "backward"):
            per_step = [step[index] for step in steps[f"{phase}_seconds"]]
            assert sum(per_step) / len(per_step) * 1e3 == pytest.approx(layer[f"{phase}_ms"])
    # PyTorch's optimizer step, timed whole (torch.optim's own record_function): each step's
    assert len(steps["update_seconds"]) == 4 and steps["layer_update_seconds"] is None
    assert sum(steps["update_seconds"]) / 4 * 1e3 == pytest.approx(profiled["profile"]["update_ms"])
    host = kept["host"]
    assert len(host["time"]) == len(host["rss_mib"]) > 10
    # the record's peak: the samples' highest, or the runner's own peak the kernel kept where no sample caught it
    assert 0 < max(host["rss_mib"]) <= profiled["memory"]["host_peak_rss_mib"]
    # a CPU run: its GPU series, where the node has GPUs, are theirs as it left them idle, none of its memory on them
    assert kept["gpus_idle"] and all(mib is None for gpu in kept["gpus"] for mib in gpu["process_mib"])


def test_a_profile_names_every_layer_of_the_description_and_times_both_passes(profiled, record_schema):
    jsonschema.validate({key: value for key, value in profiled.items() if key != "path"}, record_schema)
    assert profiled["status"] == "ok", profiled["reason"]
    profile = profiled["profile"]
    layers = {layer["name"]: layer for layer in profile["layers"]}
    assert list(layers) == networks.layer_names(networks.network("alexnet", "cifar10"))
    assert profile["steps"] == 4  # as many as the timed steps; the profiler's first step left out
    assert all(layer["forward_ms"] > 0 for layer in layers.values())
    # every weighted layer's backward is found, the first convolution's weight gradient too (its input has none)
    assert all(layer["backward_ms"] > 0 for layer in layers.values() if layer["kind"] in ("conv", "dense"))
    # the time is the layer's it was spent in: the slowed layer's forward holds its known interval, its neighbours'
    # do not
    slowest = max(layers, key=lambda name: layers[name]["forward_ms"])
    assert slowest == SLOW_LAYER and layers[SLOW_LAYER]["forward_ms"] >= LAYER_SLEEP_S * 1e3
    assert all(layers[name]["forward_ms"] < LAYER_SLEEP_S * 1e3 for name in layers if name != SLOW_LAYER)
    # the momentum update is timed, whole (PyTorch updates every weight in one call): no layer's, but accounted for
    assert profile["update_ms"] > 0 and "update_ms" not in profile["reasons"]
    assert profile["update_share"] == pytest.approx(profile["update_ms"] / profile["iteration_ms"])
    assert all(layer["update_ms"] is None for layer in layers.values())
    accounted = sum(layer["forward_ms"] + layer["backward_ms"] for layer in layers.values()) + profile["update_ms"]
    assert profile["accounted_ms"] == pytest.approx(accounted)
    assert profile["unaccounted_share"] == pytest.approx(1 - accounted / profile["iteration_ms"])
    assert 0 <= profile["unaccounted_share"] < 1
    assert profile["overhead"] == pytest.approx(profile["iteration_ms"] / profile["unprofiled_iteration_ms"])
    # seed 004's: the whole profiled training (the profiler's start, the step left out, the kept steps, the trace read)
    # over as many unprofiled steps' time: its wall time holds at least the kept steps
    whole_ms = profile["whole_overhead"] * (profile["steps"] + 1) * profile["unprofiled_iteration_ms"]
    assert whole_ms > profile["iteration_ms"] * profile["steps"]
    assert profile["whole_seconds"] == pytest.approx(whole_ms / 1e3)  # and in seconds, as its Figures 4-1 and 4-2
    unprofiled_seconds = (profile["steps"] + 1) * profile["unprofiled_iteration_ms"] / 1e3
    assert profile["whole_unprofiled_seconds"] == pytest.approx(unprofiled_seconds)
    assert profile["whole_overhead_seconds"] == pytest.approx(profile["whole_seconds"] - unprofiled_seconds)
    # the speed is the unprofiled steps', as a training run's
    timed = profiled["timing"]["iteration_seconds"][2:]
    assert profiled["timing"]["images_per_second_mean"] == pytest.approx(8 * len(timed) / sum(timed), rel=1e-3)
    assert profile["unprofiled_iteration_ms"] == pytest.approx(sum(timed) / len(timed) * 1e3)


def test_seed_004s_figures_draw_each_block_in_every_profiled_step_and_the_missing_time(profiled, tmp_path):
    """Blocks as the seed grouped AlexNet's layers; the error per step and the missing time at each quarter come
    from the same kept steps; a record without series is named, not drawn."""
    kept = files.read_json(series_path(Path(profiled["path"])))["profile"]
    groups = networks.layer_groups(networks.network("alexnet", "cifar10"))
    blocks = block_seconds(kept, groups)
    # PyTorch's update, timed whole, is a block of its own after the network's
    assert list(blocks) == ["conv1", "conv2", "conv3", "conv4", "conv5", "fc1", "fc2", "output", "update"]
    steps = len(kept["iteration_seconds"])
    total = sum(sum(row) for phase in ("forward", "backward") for row in kept[f"{phase}_seconds"])
    total += sum(kept["update_seconds"])
    assert sum(seconds.sum() for seconds in blocks.values()) == pytest.approx(total)  # every layer in one block
    share, missing = unaccounted(kept)
    assert missing[100] == (steps, pytest.approx(sum(kept["iteration_seconds"]) - total))
    first = sum(kept["forward_seconds"][0]) + sum(kept["backward_seconds"][0]) + kept["update_seconds"][0]
    assert missing[50][0] == steps // 2 and share[0] == pytest.approx(1 - first / kept["iteration_seconds"][0])
    # where the profiler attributes the update to the layers (TensorFlow's, JAX's), each block holds its layers'
    names = kept["layers"]
    per_layer = {**kept, "layer_update_seconds": [[0.001 * (name in ("conv1", "dense3")) for name in names]] * steps,
                 "update_seconds": [0.002] * steps}
    attributed = block_seconds(per_layer, groups)
    assert "update" not in attributed
    assert attributed["conv1"] - blocks["conv1"] == pytest.approx([0.001] * steps)
    assert attributed["output"] - blocks["output"] == pytest.approx([0.001] * steps)
    assert attributed["fc1"] == pytest.approx(blocks["fc1"])
    older = {**profiled, "path": str(tmp_path / "rep2.json"), "run": {**profiled["run"], "repetition": 2,
                                                                       "framework": "tensorflow"}}
    layer_steps([profiled, older], [tmp_path / "steps.svg"])
    svg = (tmp_path / "steps.svg").read_text()
    assert all(f'id="block pytorch cpu profile {block}"' in svg for block in blocks)
    assert 'id="unaccounted pytorch cpu profile"' in svg
    assert 'id="total pytorch cpu profile"' in svg and 'id="profiled pytorch cpu profile"' in svg  # its Figure 4-14
    assert "process 1" not in svg  # one device
    assert "no series beside rep2.json (made before 0.31.0)" in svg
    layer_phases([profiled, older], [tmp_path / "phases.svg"])
    svg = (tmp_path / "phases.svg").read_text()
    assert all(f'id="{phase} pytorch cpu profile {block}"' in svg for phase in ("forward", "backward")
               for block in blocks if block != "update")  # its Figures 4-5 to 4-12, every block at once
    assert 'id="forward pytorch cpu profile update"' not in svg and "no series beside rep2.json" in svg


@pytest.mark.slow
@pytest.mark.needs_env
@pytest.mark.parametrize("framework", ["tensorflow", "mxnet", "caffe", "keras-tensorflow", "keras-jax", "keras-torch"])
def test_each_frameworks_profiler_times_the_same_layers(framework, request):
    environment = {"keras-tensorflow": "tensorflow", "keras-jax": "jax"}.get(framework, framework)
    python = sys.executable if framework == "keras-torch" else request.getfixturevalue(f"{environment}_python")
    result = run_in(python, "profile_in_framework.py", framework)
    profile = layer_profile(_spec(framework=framework), result, None)
    layers = {layer["name"]: layer for layer in profile["layers"]}
    assert list(layers) == networks.layer_names(networks.network("alexnet", "cifar10")) and profile["steps"] == 4
    assert all(layers[name]["backward_ms"] > 0 for name in layers if layers[name]["kind"] in ("conv", "dense"))
    assert profile["accounted_ms"] > 0 and profile["overhead"] > 0
    if framework in ("tensorflow", "keras-tensorflow"):  # a convolution's forward is fused with its bias and ReLU,
        assert all(layers[f"relu{k}"]["forward_ms"] > 0 for k in range(1, 6))  # named after the ReLU
    else:
        assert all(layers[f"conv{k}"]["forward_ms"] > 0 for k in range(1, 6))
    if framework in ("mxnet", "caffe", "keras-torch"):  # one layer after another, nothing overlapping
        assert 0 <= profile["unaccounted_share"] < 1
    weighted = [name for name in layers if layers[name]["kind"] in ("conv", "dense")]
    if framework in ("tensorflow", "keras-tensorflow", "keras-jax"):  # each weight's update in its layer's scope
        assert all(layers[name]["update_ms"] > 0 for name in weighted)
        assert all(layers[name]["update_ms"] == 0 for name in layers if name not in weighted)  # no weights
        assert profile["update_ms"] == pytest.approx(sum(layer["update_ms"] for layer in layers.values()))
    elif framework == "caffe":  # caffe time's way: a profiled step makes no update
        assert profile["update_ms"] is None and "no update" in profile["reasons"]["update_ms"]
    else:  # MXNet's update operators and Keras's apply on torch span several layers: timed whole
        assert profile["update_ms"] > 0 and all(layer["update_ms"] is None for layer in layers.values())
    if framework == "mxnet":  # its operators carry no layer names: only a chain of layers maps onto them
        assert "matched in order" in profile["method"]
        assert "sequential networks" in run_in(python, "profile_in_framework.py", framework, "googlenet")["unavailable"]


def test_two_processes_profile_each_device_s_layers_and_the_all_reduce(tmp_path, record_schema):
    """PyTorch over two real processes (torchrun, gloo; seed 004's two-GPU profile on CPUs): each times its own
    layers, the first gathers them, and each step's all-reduces (gloo's own events) are timed apart."""
    path = tmp_path / "rep1.json"
    record = monitor.run(_spec(device="2xcpu"), sys.executable, tmp_path / "run.log", 300, 20, "sha",
                         series_at=series_path(path))
    write_record(record, path)
    record = load_records([path])[0]
    jsonschema.validate({key: value for key, value in record.items() if key != "path"}, record_schema)
    assert record["status"] == "ok", record["reason"]
    profile, names = record["profile"], networks.layer_names(networks.network("alexnet", "cifar10"))
    assert [device["process"] for device in profile["devices"]] == [0, 1]
    for device in profile["devices"]:
        assert [layer["name"] for layer in device["layers"]] == names
        assert all(layer["backward_ms"] > 0 for layer in device["layers"] if layer["kind"] in ("conv", "dense"))
    assert profile["devices"][0]["layers"] == profile["layers"]  # the first process's are the run's
    assert profile["all_reduce_ms"] > 0
    assert profile["all_reduce_share"] == pytest.approx(profile["all_reduce_ms"] / profile["iteration_ms"])
    layer_steps([record], [tmp_path / "steps.svg"])  # seed 004's Figures 4-3 and 4-4: a panel per device
    svg = (tmp_path / "steps.svg").read_text()
    assert 'id="block pytorch 2xcpu profile conv1"' in svg and 'id="block pytorch 2xcpu profile conv1 process 1"' in svg
    assert "time per block, process 1" in svg


def test_a_profile_says_why_it_has_no_device_apart_or_no_layers():
    assert layer_profile(_spec(), {}, "see the run's reason (unavailable)")["reasons"]["overhead"] == (
        "see the run's reason (unavailable)")
    one = {"iteration_seconds": [0.1] * 6, "profile": {"method": "m", "iteration_seconds": [0.2] * 4,
                                                        "layers": [{"conv1": (0.05, 0.06)}] * 4}}
    block = layer_profile(_spec(), one, None)
    assert block["all_reduce_ms"] is None and block["reasons"]["all_reduce_share"] == "one device: no all-reduce"
    assert block["update_ms"] is None and block["reasons"]["update_share"] == (
        "the dlbench that ran it did not time the optimizer's update")
    untimed = {**one, "profile": {**one["profile"], "update_seconds": None, "update_untimed": "no update event"}}
    assert layer_profile(_spec(), untimed, None)["reasons"]["update_ms"] == "no update event"
    quick = {**one, "profile": {**one["profile"], "whole_seconds": 0.3, "whole_steps": 4}}
    noise = layer_profile(_spec(), quick, None)  # the profiled training faster than as many unprofiled steps
    assert noise["whole_overhead_seconds"] == pytest.approx(0.3 - 4 * 0.1) and noise["whole_overhead"] < 1
    several = layer_profile(_spec(framework="mxnet", device="gpu2"), one, None)
    assert several["reasons"]["devices"] == "mxnet's profile does not time a step's devices apart"


def test_jax_s_trace_times_each_layer_s_xla_ops_by_their_hlo_op_names():
    """A real trace (keras_jax_profile.xplane.pb.gz: two steps of Keras on JAX 0.10.2 training LeNet on synthetic
    MNIST, batch 16, on this machine's CPU, under jax.profiler as the LayerProfiler starts it; kept: the train
    step's HLO and its ops' and calls' events): every XLA op names its HLO instruction, whose op_name names
    the Keras layer; the transposed computation is the backward pass."""
    space = xspace.read_space(gzip.decompress((Path(__file__).parent / "keras_jax_profile.xplane.pb.gz")
                                                   .read_bytes()))
    names = networks.layer_names(datasets.description("lenet", "mnist"))
    steps, updates = xspace.per_step(space, names, "PjitFunction(train_step)", xspace.HOST_PLANE)
    assert len(steps) == 2 and all(list(step) == names for step in steps)
    for step in steps:
        assert all(step[name][0] > 0 and step[name][1] > 0 for name in ("conv1", "conv2", "dense1", "dense2"))
        assert step["flatten1"][0] == 0  # a reshape XLA does without an op
    # made before the optimizer's ops had their layers' scopes: no update is timed, rather than none taken
    assert updates_found(updates, xspace.UNTIMED) == (None, None, xspace.UNTIMED)
    assert xspace.layer_of("jit(train_step)/transpose(jvp(conv2))/conv_general_dilated", set(names)) == (
        "conv2", xspace.BACKWARD_PHASE)
    assert xspace.layer_of("jit(train_step)/jvp(compile_loss)/exp", set(names)) == (None, xspace.FORWARD_PHASE)
    # the op_name Keras on JAX gives an update of conv2's weights (keras_layers.updates_in_layer_scopes)
    assert xspace.layer_of("jit(train_step)/sgd/weight_update/conv2/mul", set(names)) == (
        "conv2", xspace.UPDATE_PHASE)
    # no step is found where the trace has no call of the step's name
    assert xspace.per_step(space, names, "PjitFunction(other_step)", xspace.HOST_PLANE) == ([], [])


class _Trace:
    """An XSpace with the planes and stats TensorFlow's GPU profile has (XLA's CUPTI collector,
    xla/backends/profiler/gpu/cupti_collector.cc, writes them for TensorFlow 2.21 and JAX): on ``/host:CPU``
    the step's call; on ``/host:CUPTI`` a line per host thread, each kernel launch (``cuLaunchKernel``) with
    its ``correlation_id``; on ``/device:GPU:<n>`` a line per stream (``Stream #14(Kernel)``), each kernel named
    by its function with the same ``correlation_id`` (uint64) and a ``tf_op`` stat whose ``ref_value`` names a
    stat metadata: the op whose annotation was open when the kernel was launched (``name:type``). Times in ms
    from the line's start; lines start at 1 s."""

    def __init__(self):
        self.space, self.correlation = xspace.MESSAGES["XSpace"](), 0

    def _line(self, plane_name: str):
        plane = next((plane for plane in self.space.planes if plane.name == plane_name), None)
        if plane is None:
            plane = self.space.planes.add(name=plane_name)
            plane.lines.add(name="Stream #14(Kernel)" if "GPU" in plane_name else "Host Threads/4242",
                            timestamp_ns=1_000_000_000)
        return plane, plane.lines[0]

    def _metadata(self, entries, name: str) -> int:
        found = next((entry.key for entry in entries if entry.value.name == name), None)
        if found is None:
            found = len(entries) + 1
            entries.add(key=found).value.name = name
        return found

    def event(self, plane_name: str, name: str, start_ms: float, duration_ms: float, **stats):
        plane, line = self._line(plane_name)
        event = line.events.add(metadata_id=self._metadata(plane.event_metadata, name),
                                offset_ps=int(start_ms * 1e9), duration_ps=int(duration_ms * 1e9))
        for key, value in stats.items():
            stat = event.stats.add(metadata_id=self._metadata(plane.stat_metadata, key))
            if isinstance(value, str):
                stat.ref_value = self._metadata(plane.stat_metadata, value)
            else:
                stat.uint64_value = value

    def kernel(self, gpu: int, name: str, op: str, launched_ms: float | None, start_ms: float, duration_ms: float):
        self.correlation += 1
        if launched_ms is not None:
            self.event(xspace.CUPTI_PLANE, "cuLaunchKernel", launched_ms, 0.01, correlation_id=self.correlation)
        self.event(f"{xspace.GPU_PLANE}{gpu}", name, start_ms, duration_ms, correlation_id=self.correlation,
                   tf_op=op)


def test_tensorflow_s_gpu_trace_times_each_layer_s_kernels_in_the_step_that_launched_them():
    """A documented TensorFlow GPU trace (_Trace) of three steps on two GPUs (MirroredStrategy): each kernel
    counts for the layer of the op that launched it, in the step whose call launched it, even where the GPU
    ran it after the next step's call began; the second replica's ops (``replica_1/``) for the same layers on
    the second GPU; NCCL's all-reduce kernels for no layer, timed apart on the first GPU."""
    trace = _Trace()
    for step in range(3):
        trace.event(xspace.HOST_PLANE, "train_step", 10 * step, 4)
        for gpu, replica in ((0, ""), (1, "replica_1/")):
            trace.kernel(gpu, "implicit_convolve_sgemm", f"{replica}sequential/conv1_1/Conv2D:Conv2D",
                         10 * step + 1, 10 * step + 2, 1.0 + gpu)
            trace.kernel(gpu, "gemv2T_kernel", f"{replica}sequential/dense1/MatMul:MatMul", 10 * step + 1.5,
                         10 * step + 3.5, 0.25)
            # launched in this step, run after the next step's call began (one step in flight)
            trace.kernel(gpu, "wgrad_alg0_engine", f"{replica}gradient_tape/sequential/conv1_1/Conv2D/"
                         "Conv2DBackpropFilter:Conv2DBackpropFilter", 10 * step + 2, 10 * step + 10.5, 0.5)
            trace.kernel(gpu, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "NcclAllReduce:NcclAllReduce",
                         10 * step + 3, 10 * step + 11, 0.75)
            # the momentum update of conv1's weights, in its scope (Keras's optimizer, TensorFlow's suffix)
            trace.kernel(gpu, "Sub_GPU_DT_FLOAT_DT_FLOAT_kernel", f"{replica}sgd/weight_update_1/conv1/Sub:Sub",
                         10 * step + 3.5, 10 * step + 11.8, 0.125)
    trace.kernel(0, "redzone_checker", "", None, 35, 9.0)  # no op, no launch traced: counts for nothing
    devices, all_reduce, updates = xspace.tensorflow_per_step(trace.space, ["conv1", "dense1", "dense2"],
                                                              "train_step", 2)
    assert len(devices) == 2 and all(len(steps) == 3 for steps in devices)
    for gpu, steps in enumerate(devices):
        for step in steps:
            assert step["conv1"] == pytest.approx((1.0e-3 + gpu * 1e-3, 0.5e-3))
            assert step["dense1"] == pytest.approx((0.25e-3, 0.0)) and step["dense2"] == (0.0, 0.0)
    assert all_reduce == pytest.approx([0.75e-3] * 3)
    assert updates == [pytest.approx({"conv1": 0.125e-3, "dense1": 0.0, "dense2": 0.0})] * 3  # the first GPU's
    one_gpu, no_all_reduce, _ = xspace.tensorflow_per_step(trace.space, ["conv1", "dense1"], "train_step", 1)
    assert len(one_gpu) == 1 and no_all_reduce is None
    assert xspace.tensorflow_layer_of("replica_1/gradient_tape/sequential/conv2_1/Relu/ReluGrad:ReluGrad",
                                      {"conv2"}) == ("conv2", xspace.BACKWARD_PHASE)
    with pytest.raises(ValueError, match="no kernel on /device:GPU:2"):  # a GPU the trace holds nothing of
        xspace.tensorflow_per_step(trace.space, ["conv1"], "train_step", 3)


def test_the_layers_table_and_figure_read_the_same_layer_across_frameworks(profiled, tmp_path):
    other = {**profiled, "path": str(tmp_path / "cntk.json"), "status": "unavailable",
             "reason": "profile: cntk runs train, inference only", "profile": None,
             "run": {**profiled["run"], "framework": "cntk"}}
    records = [profiled, other]
    table = layers_table(records, appendix(runs_table(records))).set_index("framework")
    means = layer_means([profiled]).assign(total=lambda t: t["forward_ms"] + t["backward_ms"])
    top = means.nlargest(1, "total").iloc[0]
    assert table.loc["pytorch", "layer 1"].startswith(f"{top['layer']} ")
    # (marked contended where CI shares the cores)
    assert "(n=1, no interval)" in table.loc["pytorch", "unaccounted_share"]
    assert "(n=1, no interval)" in table.loc["pytorch", "profiling_whole_overhead"]
    assert "(n=1, no interval)" in table.loc["pytorch", "profiling_whole_overhead_seconds"]
    assert table.loc["cntk", "profiling_overhead"] == "unavailable: profile: cntk runs train, inference only"
    assert table.loc["cntk", "layer 1"] == ""
    # PyTorch's update, timed whole: a column of the table, a bar of its own in the figure
    assert float(table.loc["pytorch", "update ms/step"].replace(",", "")) == pytest.approx(
        profiled["profile"]["update_ms"], rel=0.01)
    layer_times(records, [tmp_path / "layers.svg"])
    svg = (tmp_path / "layers.svg").read_text()
    assert 'id="forward pytorch cpu profile"' in svg and 'id="unaccounted pytorch cpu profile"' in svg
    assert 'id="update pytorch cpu profile"' in svg
    assert "unavailable: profile: cntk" in svg


def test_profile_cases_take_a_training_runs_iterations():
    config = validated({"frameworks": ["pytorch", "keras-jax", "onnxruntime"], "benchmarks": [
        {"dataset": "cifar10", "data": "synthetic", "networks": ["alexnet"], "tasks": ["profile"],
         "iterations": 12, "warmup_iterations": 2}]})
    found = {case.framework: case for case in cases(config)}
    assert sorted(found) == ["keras-jax", "pytorch"]  # ONNX Runtime cannot train
    assert (found["pytorch"].iterations, found["pytorch"].warmup_iterations) == (12, 2)
