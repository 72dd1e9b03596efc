"""The TensorFlow, MXNet, Caffe and Keras 3 backends, each run in its own venv: the same networks as
PyTorch, their own readers of their own formats, and data parallelism over two devices of this CPU."""
import json
import math
import os
import subprocess
import sys

import pytest
from dlbench import datasets, formats, networks, paths, registry
from dlbench.backends import cntk as cntk_backend
from dlbench.datasets import ilsvrc12

from ...conftest import IN_FRAMEWORK, run_in


def _generated(root, family, train=40, test=20):
    datasets.generate(family, root / family / "raw", train_images=train, test_images=test, seed=5)
    datasets.unpack(family, root / family / "raw", root / family / "data")
    return root / family / "data"


def _convert_in(python, format_name, family, data_dir, output):
    """A whole-dataset conversion job, run by ``python`` (RecordIO needs MXNet's venv)."""
    job = {"kind": "convert", "format": format_name, "family": family, "data_dir": str(data_dir),
           "output": str(output), "seed": 7}
    subprocess.run([python, "-m", "dlbench.formats", json.dumps(job)], env=paths.with_package(dict(os.environ)),
                   check=True, capture_output=True)
    return output


# The interpreter each framework's builder is counted in (the fixture that gives it; None: this one), or where else
BUILDER_PYTHONS = {"pytorch": None, "keras-torch": None, "onnxruntime": None, "cudnn": None,
                   "tensorflow": "tensorflow_python", "keras-tensorflow": "tensorflow_python",
                   "tensorflow-nn": "tensorflow_python", "mxnet": "mxnet_python", "keras-jax": "jax_python",
                   "caffe": "caffe_python", "tensorflow-2.16": "tensorflow_2_16_python",
                   "tensorflow-2.18": "tensorflow_2_18_python"}
COUNTED_ELSEWHERE = {"cntk": "test_cntk.py, in its worker's Python 3.6", "cntk-2.5": "test_cntk.py, the same",
                     "mxnet-1.2": "test_release_workers.py, in its worker's Python 3.6",
                     "tensorflow-1.9": "test_release_workers.py, the same",
                     "tensorflow-nn-1.9": "test_release_workers.py, the same",
                     "pytorch-1.0": "test_release_workers.py, the same",
                     "keras2-tensorflow": "test_release_workers.py, the same", "keras2-mxnet": "the same",
                     "mxnet-1.4": "test_release_workers.py, the same (slow tier)", "mxnet-1.6": "the same"}
UNBUILT = {("tensorflow-nn", "lstm/text")}  # raw tf.nn has no LSTM op (an inference-only builder of convolutions)


def test_every_registered_frameworks_builder_is_counted_against_the_descriptions():
    assert set(BUILDER_PYTHONS) | set(COUNTED_ELSEWHERE) == set(registry.REGISTRY)


@pytest.mark.slow
@pytest.mark.needs_env
def test_every_network_has_the_same_trainable_parameters_in_every_framework(request):
    expected = {}
    for name, sizings in networks.SIZINGS.items():
        for sized_for in sizings:
            description = networks.network(name, sized_for)
            expected[f"{name}/{sized_for}"] = [networks.trainable_parameters(description), [1, description.num_classes]]
    assert len(expected) == 18  # Figure 5.1's cases, seed 001's MLP, CNN, LSTM, seed 003's ResNet-18, seed 004's two
    for framework, fixture in BUILDER_PYTHONS.items():
        counted = run_in(request.getfixturevalue(fixture) if fixture else sys.executable, "parameter_counts.py",
                         framework)
        for network, found in counted.items():
            if (framework, network) in UNBUILT:
                assert found.startswith("unavailable: "), (framework, network, found)
            else:
                assert found == expected[network], (framework, network)
        assert set(counted) == set(expected), framework


@pytest.mark.slow
def test_caffes_lstm_on_restacked_steps_is_the_lstm_of_the_batch(caffe_python):
    """Caffe's LSTM wants time-major steps and continuation flags: what the builder wires must compute
    the LSTM of each batch-major sequence (against NumPy, Caffe's weights)."""
    assert run_in(caffe_python, "caffe_lstm.py") == {"largest_difference": pytest.approx(0, abs=1e-5),
                                                     "shape": [3, 60]}


@pytest.mark.slow
def test_tensorflow_reads_the_tfrecords_back_and_batches_them(tmp_path, tensorflow_python):
    for family in ("mnist", "cifar10"):
        formats.convert("tfrecord", family, _generated(tmp_path, family), tmp_path / family / "tfrecord", seed=7,
                        log=lambda line: None)
    raw, index = tmp_path / "imagenet" / "raw", tmp_path / "imagenet" / "index"
    ilsvrc12.generate(raw, classes=3, train_images=9, test_images=3, seed=2)
    ilsvrc12.build_index(raw, index, log=lambda line: None)
    shards = []
    for number in range(2):
        shard = formats.Shard("tfrecord", "train", number, 2, "jpeg", (3, 224, 224))
        formats.write_shard(shard, ilsvrc12.Source(raw, index), tmp_path / "shards" / shard.name, log=lambda line: None)
        shards.append(tmp_path / "shards" / shard.name)
    (tmp_path / "imagenet" / "tfrecord").mkdir()
    formats.link_shards(tmp_path / "imagenet" / "tfrecord", shards)

    result = run_in(tensorflow_python, "tfrecord_in_tensorflow.py", tmp_path)
    for family in ("mnist", "cifar10"):
        assert result[f"{family}/test"] == {"count": [20, 20], "equal": True}
    assert all(min(shape[1:]) == 256 for shape in result["imagenet/train"]["shapes"])  # resized, not cropped
    for family, shape, classes in (("mnist", [4, 28, 28, 1], 10), ("cifar10", [4, 32, 32, 3], 10),
                                   ("imagenet", [4, 224, 224, 3], 3)):
        batch = result[f"{family}/pipeline"]
        assert batch["images"] == shape and batch["dtype"] == "float32"  # NHWC, cropped to the input
        assert all(0 <= label < classes for label in batch["labels"])
        low, high = batch["pixel_range"]
        assert -0.5 < low < high < 255.5  # normalised with the family's statistics


@pytest.mark.slow
@pytest.mark.needs_env
@pytest.mark.parametrize("framework", ["tensorflow", "mxnet"])
def test_data_parallel_training_splits_the_global_batch(tmp_path, framework, request):
    python = request.getfixturevalue(f"{framework}_python")
    data = _generated(tmp_path, "mnist", train=256)
    if framework == "tensorflow":
        converted = tmp_path / "tfrecord"
        formats.convert("tfrecord", "mnist", data, converted, seed=7, log=lambda line: None)
    else:
        converted = _convert_in(python, "recordio", "mnist", data, tmp_path / "recordio")
    result = run_in(python, "train_in_framework.py", framework, converted)
    for mode in ("synthetic", "generated"):
        run = result[mode]
        assert run["replicas"] == 2 and run["per_replica_batch"] == [16, 16], mode  # global batch 32
        assert run["data_parallel"].startswith(("tf.distribute.MirroredStrategy over /cpu:0, /cpu:1",
                                                "gluon.Trainer's kvstore 'device' over 2 contexts")), mode
        assert all(math.isfinite(loss) for loss in run["losses"]), mode
    losses = result["synthetic"]["losses"]
    assert losses[-1] < 0.5 * losses[0]  # the summed gradients of both replicas fit the resident batch
    if framework == "mxnet":
        assert result["oversized_batch"] == "mnist-generated has 256 training images, fewer than one batch of 512"
        assert result["blank_images"] == 0  # an epoch's last batch is completed with real images


@pytest.mark.slow
def test_mxnet_clocks_its_steps_by_its_engines_stamps_and_a_failed_step_raises(mxnet_python):
    result = run_in(mxnet_python, "mxnet_step_stamps.py")
    assert result["steps"] == 40 and result["shortest"] > 0, result
    assert result["step_completion"].startswith("MXNet's engine"), result
    assert result["window"] == pytest.approx(result["timed_sum"]), result
    assert result["stamp_before_the_failure"] is True
    assert result["failed_step"].startswith("raised"), result


@pytest.mark.slow
def test_gpu_runs_on_a_cpu_only_caffe_are_unavailable_not_an_abort(caffe_python):
    assert run_in(caffe_python, "caffe_without_cuda.py") == {
        "gpu1": "this Caffe has no CUDA support (a CPU_ONLY build)",
        "gpu2": "this Caffe has no CUDA support (a CPU_ONLY build)"}


@pytest.mark.slow
def test_multi_gpu_caffe_trains_in_caffe_train_whose_logged_iterations_the_steps_follow(caffe_python, tmp_path):
    """The thesis's two-GPU Caffe (``caffe train --gpu 0,1``), its path taken here on the CPU: the same tool
    and solver without ``--gpu``, on generated MNIST in Caffe's LMDB."""
    converted = tmp_path / "lmdb"
    formats.convert("lmdb", "mnist", _generated(tmp_path, "mnist", train=256), converted, seed=7, log=lambda line: None)
    result = run_in(caffe_python, "caffe_train_tool.py", converted)
    assert result["command"][:2] == ["train", result["command"][1]] and result["command"][1].startswith("--solver=")
    assert len(result["command"]) == 2  # no --gpu: the CPU
    assert result["two_gpus"] == ["train", "--solver=solver.prototxt", "--gpu=0,1"]
    assert result["timed_steps"] == 29 and math.isfinite(result["last_loss"])
    assert result["last_loss"] < 0.8 * result["first_loss"]  # the tool's solver trains the network the harness wrote
    assert result["exit_code"] is not None  # closing the harness ends the tool
    assert result["failed"].startswith("caffe train ended (")
    assert "no-such-solver.prototxt" in result["failed"]


def _two_reference_steps(rule: networks.Optimizer, rate: float, gradient: list[float],
                         cntk_rmsprop: bool = False) -> list[float]:
    """networks.Optimizer's formulas, two steps from w = 0 on a constant gradient; with ``cntk_rmsprop`` the
    difference the registry states for CNTK (the mean square starts at the first squared gradient, no epsilon)."""
    weights, velocity, square = [0.0] * len(gradient), [0.0] * len(gradient), [None] * len(gradient)
    for _ in range(2):
        for i, g in enumerate(gradient):
            if rule.kind == "sgd":
                velocity[i] = rule.momentum * velocity[i] + g
                weights[i] -= rate * velocity[i]
            elif cntk_rmsprop:
                square[i] = g * g if square[i] is None else rule.rho * square[i] + (1 - rule.rho) * g * g
                weights[i] -= rate * g / math.sqrt(square[i])
            else:
                square[i] = rule.rho * (square[i] or 0.0) + (1 - rule.rho) * g * g
                weights[i] -= rate * g / math.sqrt(square[i] + rule.epsilon)
    return weights


OPTIMIZER_RATES = {"sgd": 0.1, "rmsprop": 0.01}  # as tests/in_framework/optimizer_steps.py takes them


@pytest.mark.slow
@pytest.mark.needs_env
@pytest.mark.parametrize("release", [name for name, entry in registry.REGISTRY.items()
                                     if entry.release == "between" and not entry.worker])
def test_a_release_between_on_today_s_backend_steps_each_optimizer_as_today_s_does(request, release):
    """Today's backend on an older release (TensorFlow 2.16 under today's Keras): the same math as the description's."""
    python = request.getfixturevalue(BUILDER_PYTHONS[release])
    rules = (networks.SGD_MOMENTUM, networks.RMSPROP)
    assert run_in(python, "optimizer_steps.py", "keras") == {
        rule.kind: pytest.approx(_two_reference_steps(rule, OPTIMIZER_RATES[rule.kind], [1.0, 2.0]), rel=1e-5)
        for rule in rules}


def test_every_framework_steps_each_optimizer_as_described(tensorflow_python, mxnet_python, caffe_python,
                                                          cntk_worker_python):
    """The same math: classical momentum (CNTK's unit-gain momentum would step a tenth as far) and RMSprop
    (epsilon inside or after the square root: 1e-7 against a squared gradient of 0.1 changes nothing here),
    except where the registry says how a framework's own differs (CNTK's RMSProp). CNTK steps on a batch of 4
    samples: its rate applies to their mean gradient, as the others' does."""
    rules = (networks.SGD_MOMENTUM, networks.RMSPROP)
    expected = {rule.kind: pytest.approx(_two_reference_steps(rule, OPTIMIZER_RATES[rule.kind], [1.0, 2.0]), rel=1e-5)
                for rule in rules}
    for framework, python in (("pytorch", sys.executable), ("keras", tensorflow_python), ("mxnet", mxnet_python),
                              ("caffe", caffe_python)):
        assert run_in(python, "optimizer_steps.py", framework) == expected, framework
    stepped = subprocess.run([cntk_worker_python, str(IN_FRAMEWORK / "cntk_optimizer_steps.py"),
                              str(cntk_backend.WORKER),
                              json.dumps({rule.kind: [vars(rule), OPTIMIZER_RATES[rule.kind]] for rule in rules})],
                             capture_output=True, text=True, check=False)
    assert stepped.returncode == 0, stepped.stderr[-3000:]
    assert "rmsprop" in registry.REGISTRY["cntk"].optimizer_differences
    assert json.loads(stepped.stdout.splitlines()[-1]) == {
        "sgd": expected["sgd"],
        "rmsprop": pytest.approx(_two_reference_steps(networks.RMSPROP, 0.01, [1.0, 2.0], cntk_rmsprop=True), rel=1e-5)}
