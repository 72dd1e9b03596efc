"""The thesis's MXNet (1.2.0) and TensorFlow (1.9.0), seed 001's Keras 2 on each, and PyTorch 1.0.0 (PyPI's
oldest), in their workers under CPython 3.6, built by the workflow's virtualenv job (PyPI has their wheels): the
description's networks with their parameter counts, their optimizers' math, and the runner driving each worker through
training on its format's shards, inference and an accuracy run."""
import json
import math
import os
import subprocess
import sys

import pytest
from dlbench import datasets, envs, formats, networks, paths, registry
from dlbench.backends import (
    keras2_worker,
    mxnet_worker,
    pytorch_worker,
    tensorflow_nn_worker,
    tensorflow_worker,
    worker,
)
from dlbench.run import runner
from dlbench.spec import RunSpec

from ...conftest import IN_FRAMEWORK
from .test_backends import OPTIMIZER_RATES, _two_reference_steps

FRAMEWORKS = {"mxnet-1.2": (mxnet_worker, "mxnet_1_2_worker_python"),
              "mxnet-1.4": (mxnet_worker, "mxnet_1_4_worker_python"),
              "mxnet-1.6": (mxnet_worker, "mxnet_1_6_worker_python"),
              "tensorflow-1.9": (tensorflow_worker, "tensorflow_1_9_worker_python"),
              "keras2-tensorflow": (keras2_worker, "tensorflow_1_9_worker_python"),
              "keras2-mxnet": (keras2_worker, "mxnet_1_2_worker_python"),
              "pytorch-1.0": (pytorch_worker, "pytorch_1_0_worker_python")}
VERSIONS = {name: registry.REGISTRY[name].version for name in FRAMEWORKS}


def tiered(names) -> list:
    """The releases as test parameters: a release between the thesis's and today's in the slow tier (the thesis's
    release tests its worker in the fast one; these add its MXNet versions)."""
    return [pytest.param(name, marks=pytest.mark.slow) if registry.REGISTRY[name].release == "between" else name
            for name in names]
# What a release cannot build, and why: refused by name, never run otherwise than today's runs it
UNAVAILABLE = {("mxnet-1.2", "lstm/text"): ("MXNet 1.2's gluon.rnn.LSTM is no HybridBlock (1.3 made it one): it "
                                            "cannot be hybridised with the network as today's MXNet backend's is"),
               **{(release, "lstm/text"): ("this worker builds no LSTM yet (MXNet 1.3 and later could hybridise "
                                           "gluon.rnn.LSTM as today's MXNet backend does)")
                  for release in ("mxnet-1.4", "mxnet-1.6")},
               ("tensorflow-nn-1.9", "lstm/text"): ("tf.nn has no LSTM op: the raw-op builder builds convolutional and "
                                                    "dense networks")}


def _tf1_rmsprop(rule: networks.Optimizer, rate: float, gradient: list[float]) -> list[float]:
    """Two steps of TF 1's RMSPropOptimizer: its mean square starts at 1, epsilon inside the square root."""
    weights, square = [0.0] * len(gradient), [1.0] * len(gradient)
    for _ in range(2):
        square = [rule.rho * s + (1 - rule.rho) * g * g for s, g in zip(square, gradient)]
        weights = [w - rate * g / math.sqrt(s + rule.epsilon) for w, g, s in zip(weights, gradient, square)]
    return weights


def _release(request, monkeypatch) -> tuple:
    module, fixture = FRAMEWORKS[request.param]
    python = request.getfixturevalue(fixture)
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, python)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)  # which backends.load sets for a Keras run: undone after
    return request.param, module, python


@pytest.fixture(params=tiered(FRAMEWORKS))
def release(request, monkeypatch):
    """An older release's name, backend module and worker interpreter (the runner's, through the monitor's
    variable): the thesis's, and those between it and today's (slow tier)."""
    return _release(request, monkeypatch)


@pytest.fixture(params=[name for name in FRAMEWORKS if registry.REGISTRY[name].release == "thesis"])
def thesis_release(request, monkeypatch):
    """A thesis release, as :func:`release` (each release between runs every task end to end in
    tests/workflow/test_releases.py)."""
    return _release(request, monkeypatch)


def _checks(python: str, module, *arguments) -> dict:
    found = subprocess.run([python, str(IN_FRAMEWORK / "worker_checks.py"), str(module.WORKER),
                            *map(str, arguments)], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr[-3000:]
    return json.loads(found.stdout.splitlines()[-1])


def _sizings():
    """Every network sizing: its case's name and its description."""
    for network, sizings in networks.SIZINGS.items():
        for sized_for in sizings:
            yield f"{network}/{sized_for}", networks.network(network, sized_for)


def _built(tmp_path, python: str, module, *builder: str) -> dict:
    """Every network sizing built by the worker of ``module`` (with its class ``builder`` where it has several): its
    trainable parameters and output shape, or why it cannot be built."""
    plans = {case: [list(description.input_shape), worker.description_plan(description)]
             for case, description in _sizings()}
    (tmp_path / "plans.json").write_text(json.dumps(plans))
    return _checks(python, module, "parameters", tmp_path / "plans.json", *builder)


def _described(name: str) -> dict:
    """What every network sizing should build as: the description's parameter count and classes, or unavailable."""
    return {case: f"unavailable: {UNAVAILABLE[name, case]}" if (name, case) in UNAVAILABLE
            else [networks.trainable_parameters(description), [description.num_classes]]
            for case, description in _sizings()}


@pytest.mark.needs_env
def test_each_thesis_release_builds_every_network_as_described_and_steps_each_optimizer(release, tmp_path):
    name, module, python = release
    assert _built(tmp_path, python, module) == _described(name)
    rules = (networks.SGD_MOMENTUM, networks.RMSPROP)
    stepped = _checks(python, module, "optimizer",
                      json.dumps({rule.kind: [vars(rule), OPTIMIZER_RATES[rule.kind]] for rule in rules}))
    described = {rule.kind: _two_reference_steps(rule, OPTIMIZER_RATES[rule.kind], [1.0, 2.0]) for rule in rules}
    if name == "tensorflow-1.9":  # TF 1's, as the registry says (epsilon's place changes nothing here)
        assert "rmsprop" in registry.REGISTRY[name].optimizer_differences
        described["rmsprop"] = _tf1_rmsprop(networks.RMSPROP, OPTIMIZER_RATES["rmsprop"], [1.0, 2.0])
        assert described["rmsprop"][0] > 2 * _two_reference_steps(networks.RMSPROP, 0.01, [1.0, 2.0])[0]  # shorter
    assert stepped == {kind: pytest.approx(weights, rel=1e-5) for kind, weights in described.items()}


@pytest.fixture(scope="module")
def mnist(tmp_path_factory):
    root = tmp_path_factory.mktemp("mnist")
    datasets.generate("mnist", root / "raw", train_images=96, test_images=40, seed=5)
    datasets.unpack("mnist", root / "raw", root / "data")
    return root


def _converted(root, framework: str, request) -> str:
    """Generated MNIST in the framework's format, written as the workflow writes it (RecordIO by today's MXNet); its
    directory's name, relative to ``root`` as the workflow names its data."""
    format_name = formats.FRAMEWORK_FORMATS[framework]
    writer = formats.WRITER_ENVIRONMENTS.get(format_name)
    python = request.getfixturevalue(f"{writer}_python") if writer else sys.executable
    if not (root / format_name).exists():
        job = {"kind": "convert", "format": format_name, "family": "mnist", "data_dir": str(root / "data"),
               "output": str(root / format_name), "seed": 7}
        subprocess.run([python, "-m", "dlbench.formats", json.dumps(job)], check=True, capture_output=True,
                       env=paths.with_package(dict(os.environ)))
    return format_name


def _result(tmp_path, **changes) -> dict:
    fields = {"dataset": "mnist-synthetic", "network": "lenet", "device": "cpu", "repetition": 1,
              "batch_size_global": 16, "iterations": 12, "warmup_iterations": 2, "learning_rate": 0.01, "threads": 2,
              **changes}
    tmp_path.mkdir()
    RunSpec(**fields).dump(tmp_path / "spec.json")
    runner.main([str(tmp_path / "spec.json"), str(tmp_path / "result.json")])
    return json.loads((tmp_path / "result.json").read_text())


def _run(tmp_path, **changes) -> dict:
    result = _result(tmp_path, **changes)
    assert result["status"] == "ok", result["reason"]
    return result


@pytest.mark.needs_env
def test_the_runner_trains_infers_and_scores_each_thesis_release_in_its_worker(tmp_path, thesis_release, mnist,
                                                                               request, monkeypatch):
    name, module, _ = thesis_release
    data = _converted(mnist, name, request)
    monkeypatch.chdir(mnist)  # as the workflow names its data: relative to its directory
    trained = _run(tmp_path / "train", framework=name, dataset="mnist-generated", data_dir=data)
    assert trained["framework_version"] == VERSIONS[name] and trained["python"].startswith("3.6.")
    assert len(trained["iteration_seconds"]) == 12 and 0 < trained["final_loss"] < 10
    inferred = _run(tmp_path / "inference", framework=name, task="inference", batch_size_global=8, iterations=20)
    assert len(inferred["iteration_seconds"]) == 20 and inferred["latency_seconds"]
    assert inferred["inference_idiom"] == module.Harness.INFERENCE_IDIOM
    scored = _run(tmp_path / "accuracy", framework=name, dataset="mnist-generated", data_dir=data, task="accuracy",
                  iterations=2 * (96 // 16), warmup_iterations=0, epochs=2, target_accuracy=0.0, network="mlp")
    assert [epoch["test_images"] for epoch in scored["epochs"]] == [40, 40]  # each test image once, no filler
    assert all(0 <= epoch["test_accuracy"] <= 1 for epoch in scored["epochs"])


def test_mxnet_1_2_reads_the_time_its_steps_wait_for_their_batches(tmp_path, mnist, request, monkeypatch,
                                                                   mxnet_1_2_worker_python):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, mxnet_1_2_worker_python)
    data = _converted(mnist, "mxnet-1.2", request)
    trained = _run(tmp_path / "train", framework="mxnet-1.2", dataset="mnist-generated", data_dir=str(mnist / data))
    assert trained["timed_window"]["input_wait_seconds"] > 0  # ImageRecordIter decoded each batch


def test_an_lstm_on_the_thesis_s_mxnet_is_unavailable_saying_why(tmp_path, mxnet_1_2_worker_python, monkeypatch):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, mxnet_1_2_worker_python)
    result = _result(tmp_path / "lstm", framework="mxnet-1.2", dataset="text-synthetic", network="lstm")
    assert result["status"] == "unavailable"
    assert result["reason"] == UNAVAILABLE["mxnet-1.2", "lstm/text"]


@pytest.mark.needs_env
@pytest.mark.parametrize("name", tiered(name for name in FRAMEWORKS if name != "pytorch-1.0"))  # a CUDA build: the next
def test_a_gpu_run_on_the_cpu_build_is_unavailable_before_its_worker_starts(tmp_path, name, request, monkeypatch):
    python = request.getfixturevalue(FRAMEWORKS[name][1])
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, python)
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    result = _result(tmp_path / "gpu", framework=name, device="gpu1")
    assert result["status"] == "unavailable"
    environment = os.path.dirname(os.path.dirname(python))
    assert result["reason"].startswith(f"{name} {VERSIONS[name]} in {environment} is a CPU build"), \
        result["reason"]


def test_pypi_s_torch_1_0_is_one_cuda_9_build_whose_kernels_are_read_and_whose_worker_counts_the_gpus(
        tmp_path, pytorch_1_0_worker_python, monkeypatch):
    """PyPI's only Linux wheel of torch 1.0.0, the CPU environment's too: its libcaffe2_gpu.so's fatbinary holds what
    its CUDA requirements file's first line says; a GPU run on a node without one is refused by the worker."""
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, pytorch_1_0_worker_python)
    code = pytorch_worker.gpu_code()
    stated = envs.BuildFacts.of(envs.cuda_variant(paths.PROJECT_ROOT / "envs" / "pytorch-1.0.requirements.txt"))
    assert code.cuda.startswith(stated.cuda) and min(code.sass) == stated.low and stated.high is None and code.ptx
    assert (paths.PROJECT_ROOT / "envs" / "pytorch-1.0.requirements.txt").read_text().count("torch==1.0.0") == 1
    result = _result(tmp_path / "gpu", framework="pytorch-1.0", device="gpu1")
    assert result["status"] == "unavailable"
    assert result["reason"] == "torch 1.0.0 sees 0 GPU(s), the run asks for 1"


def _lenet_profile(tmp_path, name: str, python: str, monkeypatch) -> dict:
    """A thesis release's profile of LeNet: 5 steps after the warm-up, each with every layer of the description."""
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, python)
    profiled = _run(tmp_path / "profile", framework=name, task="profile", iterations=6, warmup_iterations=1)["profile"]
    assert profiled["method"] == FRAMEWORKS[name][0].LayerProfiler.METHOD and len(profiled["layers"]) == 5
    lenet = networks.layer_names(networks.network("lenet", "mnist"))
    assert all(list(step) == lenet for step in profiled["layers"])
    return profiled


def test_tensorflow_1_9_profiles_each_layer_by_its_trace_as_seed_004_did(tmp_path, tensorflow_1_9_worker_python,
                                                                          monkeypatch):
    """Seed 004's profiler: TF 1's full trace of each step (RunMetadata), its ops told by their name scopes. TF 1 runs
    independent ops at once (inter-op threads), so the layers' times may add up to more than the step's."""
    profiled = _lenet_profile(tmp_path, "tensorflow-1.9", tensorflow_1_9_worker_python, monkeypatch)
    for step in profiled["layers"]:
        assert step["conv2"][0] > 0 and step["conv2"][1] > 0 and step["dense1"][1] > 0  # forward and backward ops
    updates = profiled["layer_update_seconds"]
    assert all(step["dense1"] > 0 and step["relu1"] == 0 for step in updates)  # whose weights, by name


@pytest.mark.needs_env
@pytest.mark.parametrize("name", ["keras2-tensorflow", "keras2-mxnet"])
def test_keras_2_trains_through_model_fit_on_either_backend_as_seed_001_did(tmp_path, name, mnist, request,
                                                                              monkeypatch):
    """Keras's own loop over NumPy arrays: each of its steps clocked as the worker's callback stamped its end, on
    synthetic data (the batch repeated) and on the training split (96 images: 6 steps an epoch, 12 in 2)."""
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, request.getfixturevalue(FRAMEWORKS[name][1]))
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    data = _converted(mnist, name, request)
    monkeypatch.chdir(mnist)
    for mode, fields in (("synthetic", {}), ("generated", {"dataset": "mnist-generated", "data_dir": data})):
        fitted = _run(tmp_path / mode, framework=name, keras_fit=True, **fields)
        assert fitted["framework_version"] == VERSIONS[name]
        assert len(fitted["iteration_seconds"]) == 12 and all(step > 0 for step in fitted["iteration_seconds"])
        assert fitted["step_completion"].startswith("Keras 2's callback at each step's end in model.fit's loop")
        assert fitted["timed_window"]["input_wait_seconds"] is None  # inside fit's steps
        assert 0 < fitted["final_loss"] < 10


@pytest.mark.needs_env
@pytest.mark.parametrize("name", ["tensorflow-1.9", "keras2-tensorflow", "keras2-mxnet"])
def test_the_lstm_trains_on_each_thesis_release_that_builds_it(tmp_path, name, request, monkeypatch):
    """Sequences go to the worker as they are (no image's NHWC transpose); keras-mxnet unrolls the LSTM on MXNet 1.2,
    whose foreach operator came in 1.3.1."""
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, request.getfixturevalue(FRAMEWORKS[name][1]))
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    trained = _run(tmp_path / "lstm", framework=name, dataset="text-synthetic", network="lstm", iterations=4,
                   warmup_iterations=1)
    assert len(trained["iteration_seconds"]) == 4 and 0 < trained["final_loss"] < 10


def test_seed_002_s_raw_op_network_infers_in_tensorflow_1_9_s_session(tmp_path, tensorflow_1_9_worker_python, mnist,
                                                                      request, monkeypatch):
    """``tensorflow-nn-1.9``: the description in raw tf.nn ops on variables (TF 1.9's worker's RawBuilder), every
    network with its parameter count but the LSTM (refused by name, as today's tensorflow-nn refuses it); inference on
    a resident batch of the worker's TFRecord input, beside tf.layers (its runs_on)."""
    name = "tensorflow-nn-1.9"
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, tensorflow_1_9_worker_python)
    assert _built(tmp_path, tensorflow_1_9_worker_python, tensorflow_worker, "RawBuilder") == _described(name)
    data = _converted(mnist, name, request)
    monkeypatch.chdir(mnist)
    inferred = _run(tmp_path / "inference", framework=name, task="inference", dataset="mnist-generated",
                    data_dir=data, batch_size_global=8, iterations=20)
    assert inferred["framework_version"] == "1.9.0" and len(inferred["iteration_seconds"]) == 20
    assert inferred["inference_idiom"] == tensorflow_nn_worker.Harness.INFERENCE_IDIOM
    assert registry.REGISTRY[name].runs_on == "tensorflow-1.9" and registry.REGISTRY[name].tasks == ("inference",)


def test_mxnet_1_2_profiles_each_layer_from_its_trace_as_today_s_mxnet_does(tmp_path, mxnet_1_2_worker_python,
                                                                              monkeypatch):
    """MXNet 1.2's profiler in the worker, its trace read by the runner as today's MXNet backend reads its own:
    operators matched in order to the layers (1.2's hybridised Flatten is a Reshape), the count checked, the
    optimizer's update operators timed whole."""
    profiled = _lenet_profile(tmp_path, "mxnet-1.2", mxnet_1_2_worker_python, monkeypatch)
    for step in profiled["layers"]:
        assert all(forward >= 0 and backward >= 0 for forward, backward in step.values()), step
        assert all(min(step[layer]) > 0 for layer in ("conv1", "conv2", "dense1", "dense2")), step  # microseconds
    assert len(profiled["update_seconds"]) == 5 and all(seconds > 0 for seconds in profiled["update_seconds"])
    branched = _result(tmp_path / "googlenet", framework="mxnet-1.2", task="profile", network="googlenet",
                       dataset="cifar10-synthetic", iterations=2, warmup_iterations=1)
    assert branched["status"] == "unavailable" and "sequential networks of one operator per layer" in branched["reason"]


def test_keras_2_on_tensorflow_1_9_profiles_each_layer_by_keras_s_name_scopes(tmp_path, tensorflow_1_9_worker_python,
                                                                              monkeypatch):
    """Keras 2's train function traced as the TF 1.9 worker traces its steps: each layer's forward and backward ops by
    Keras's name scopes; its optimizer's ops name no layer, so the update is timed whole."""
    monkeypatch.delenv("KERAS_BACKEND", raising=False)
    profiled = _lenet_profile(tmp_path, "keras2-tensorflow", tensorflow_1_9_worker_python, monkeypatch)
    for step in profiled["layers"]:
        assert step["conv2"][0] > 0 and step["conv2"][1] > 0 and step["dense1"][1] > 0  # forward and backward ops
    assert profiled["layer_update_seconds"] is None
    assert len(profiled["update_seconds"]) == 5 and all(seconds > 0 for seconds in profiled["update_seconds"])
