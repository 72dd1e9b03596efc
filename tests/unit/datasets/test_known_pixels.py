"""A CIFAR-10 archive of known pixels, laid out by hand as its authors document the python version (Krizhevsky,
"Learning Multiple Layers of Features from Tiny Images", and the dataset's page): each row of a batch's ``data`` is
one 32x32 image, its first 1024 bytes the red channel, then the green, then the blue, each in row-major order.
Unpacked, converted to every framework's format, and read back through each framework's own test-split pipeline,
every image must arrive with its label, its channels in the order the framework declares, and no axis swapped.

The pixels say where they belong: red rises with the column, green with the row, and blue is the image's own
value, so that a transposition, a channel swap or a mixed-up label each changes what is read."""
import json
import sys
import tarfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from dlbench import datasets, formats, networks
from dlbench.backends import cntk as cntk_backend
from dlbench.backends import inputs
from dlbench.formats import cntk_map
from dlbench.spec import RunSpec

from ...conftest import run_in

TEST_IMAGES, TRAIN_IMAGES, BATCH = 8, 10, 8


def known_image(number: int) -> np.ndarray:
    """(3, 32, 32) uint8: red 8 × column + number, green 8 × row + 4, blue 200 - 20 × number."""
    rows, columns = np.mgrid[0:32, 0:32]
    return np.stack([8 * columns + number, 8 * rows + 4, np.full((32, 32), 200 - 20 * number)]).astype(np.uint8)


def _row(image: np.ndarray) -> np.ndarray:
    """The documented row: the red plane's 1024 bytes row by row, then the green's, then the blue's."""
    red, green, blue = image
    return np.concatenate([red.ravel(), green.ravel(), blue.ravel()])


def write_known_archive(raw_dir):
    """cifar-10-python.tar.gz: test image k labelled k; training images of the same form (numbers 0 to 9)."""
    raw_dir.mkdir(parents=True)
    batches = {"test_batch": range(TEST_IMAGES), **{f"data_batch_{i + 1}": (2 * i, 2 * i + 1) for i in range(5)}}
    # pickled and archived as generate() does (numpy 1.x's module path, which MXNet's numpy < 1.26 loads too)
    with tarfile.open(raw_dir / "cifar-10-python.tar.gz", "w:gz") as tar:
        for name, numbers in batches.items():
            datasets._add_pickle(tar, name, {b"batch_label": name.encode(), b"labels": list(numbers),
                                             b"data": np.stack([_row(known_image(k)) for k in numbers]),
                                             b"filenames": [f"{k}.png".encode() for k in numbers]})
        datasets._add_pickle(tar, "batches.meta", {b"label_names": [f"class_{i}".encode() for i in range(10)]})


@pytest.fixture(scope="module")
def unpacked(tmp_path_factory):
    root = tmp_path_factory.mktemp("known-pixels")
    write_known_archive(root / "raw")
    datasets.unpack("cifar10", root / "raw", root / "data")
    return root


def test_the_reader_takes_the_documented_layout(unpacked):
    images, labels = datasets.load_split("cifar10", unpacked / "data", "test")
    assert labels.tolist() == list(range(TEST_IMAGES))
    assert all(np.array_equal(image, known_image(k)) for k, image in enumerate(images))
    assert images[3, 0, 5, 7] == 8 * 7 + 3 and images[3, 1, 5, 7] == 8 * 5 + 4 and images[3, 2, 5, 7] == 140


def _spec(framework: str, data_dir) -> RunSpec:
    return RunSpec(framework, "cifar10-generated", "alexnet", "cpu", 1, BATCH, 1, 0, 0.01, 1, data_dir=str(data_dir),
                   task="accuracy")


def _per_channel(values: np.ndarray) -> np.ndarray:
    return values.reshape(1, -1, 1, 1)


def _undone_per_channel(images, spec):
    mean, std = inputs.pixel_statistics(spec)
    return images * _per_channel(std) + _per_channel(mean)


def _undone_caffe(images, spec):
    """Caffe's transformer: (x - mean) × one scale, 1 / the channels' mean std (dlbench.backends.caffe)."""
    mean, std = inputs.pixel_statistics(spec)
    return images * std.mean() + _per_channel(mean)


def _undone_cntk(images, spec):
    """CNTK's reader: OpenCV's BGR, the mean image subtracted (the graph divides by std, not the reader)."""
    return images[:, ::-1] + cntk_map.read_mean(Path(spec.data_dir) / cntk_map.MEAN_FILE)[None]


def _undone_channels_last(images, spec):
    return _undone_per_channel(images.transpose(0, 3, 1, 2), spec)


# framework: (its format, its interpreter's fixture (None: this one), its layout made NCHW RGB on the 0-255 scale).
# ONNX Runtime and cuDNN take PyTorch's batches, tensorflow-nn TensorFlow's; Keras's backends share keras-torch's reader
# and normalisation. The 2017-18 releases' workers (Python 3.6) read the formats in pipelines of their own: not here.
PIPELINES = {
    "pytorch": ("lmdb", None, _undone_per_channel),
    "keras-torch": ("lmdb", None, _undone_channels_last),
    "tensorflow": ("tfrecord", "tensorflow_python", _undone_channels_last),
    "mxnet": ("recordio", "mxnet_python", _undone_per_channel),
    "caffe": ("lmdb", "caffe_python", _undone_caffe),
    "cntk": ("cntk", "cntk_worker_python", _undone_cntk),
}


def _arguments(unpacked, framework: str, format_name: str, scratch) -> tuple[RunSpec, dict]:
    """The run's spec on the converted test split and what evaluation_batch.py takes; RecordIO is written in
    MXNet's environment (by MXNet's own mxnet.recordio), there."""
    spec = _spec(framework, unpacked / format_name)
    if format_name in formats.WRITER_ENVIRONMENTS:
        return spec, {"spec": asdict(spec), "scratch": str(scratch), "convert": [format_name, str(unpacked / "data")]}
    if not (unpacked / format_name).exists():
        formats.convert(format_name, "cifar10", unpacked / "data", unpacked / format_name, seed=7,
                        log=lambda line: None)
    if framework == "cntk":
        config = cntk_backend.worker_config(spec, networks.network(spec.network, spec.family), scratch)
        return spec, {"worker": str(cntk_backend.WORKER), "config": config}
    return spec, {"spec": asdict(spec), "scratch": str(scratch)}


@pytest.mark.parametrize("framework", [pytest.param(name, marks=[pytest.mark.needs_env] if fixture else [])
                                       for name, (_, fixture, _) in PIPELINES.items()])
def test_every_framework_s_pipeline_delivers_the_known_pixels(unpacked, framework, request, tmp_path):
    format_name, fixture, undone = PIPELINES[framework]
    python = request.getfixturevalue(fixture) if fixture else sys.executable
    spec, arguments = _arguments(unpacked, framework, format_name, tmp_path / "scratch")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "arguments.json").write_text(json.dumps(arguments))
    batch = run_in(python, "evaluation_batch.py", framework, tmp_path / "arguments.json")
    images = undone(np.asarray(batch["images"], np.float32), spec)
    assert images.shape == (BATCH, 3, 32, 32) and sorted(batch["labels"]) == list(range(TEST_IMAGES))
    for image, label in zip(images, batch["labels"]):
        np.testing.assert_allclose(image, known_image(label), atol=0.01, err_msg=f"{framework}: image {label}")
