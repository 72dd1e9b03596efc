"""What every backend's input pipeline shares, so that all frameworks see the same data.

Synthetic mode: one resident batch of random pixels (text: random one-hot characters; the same
bytes in every framework), fed to every step, so that the run measures compute alone, as
tf_cnn_benchmarks' synthetic data.
Real and generated data: the training shards of the dataset in the framework's own format.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import networks
from ..datasets import FAMILIES
from ..formats import shard_dirs
from ..spec import RunSpec

FIT_ARRAYS_GIB = 4  # the most the training arrays of a keras_fit run (Keras's model.fit over NumPy) may take


def synthetic_batch(spec: RunSpec, description: networks.Network) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images (N, C, H, W) or texts (N, steps, characters) and int64 labels of the global batch."""
    rng = np.random.default_rng(spec.seed)
    shape = (spec.batch_size_global, *description.input_shape)
    if FAMILIES[spec.family].layout == "text":  # one character per step: 255 among zeros
        images = np.zeros(shape, np.uint8)
        np.put_along_axis(images, rng.integers(0, shape[-1], (*shape[:-1], 1)), 255, axis=-1)
    else:
        images = rng.integers(0, 256, shape, dtype=np.uint8)
    labels = rng.integers(0, description.num_classes, spec.batch_size_global, dtype=np.int64)
    return images, labels


def normalised_synthetic_batch(spec: RunSpec, description: networks.Network) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic batch as the networks see it: float32, per channel (x - mean) / std."""
    images, labels = synthetic_batch(spec, description)
    mean, std = pixel_statistics(spec)
    per_channel = (-1, *[1] * (len(description.input_shape) - 1))
    return (images.astype(np.float32) - mean.reshape(per_channel)) / std.reshape(per_channel), labels


def stored_shape(spec: RunSpec, description: networks.Network) -> tuple:
    """The shape the pipeline decodes (and crops) images to: the network's input, or with a case's
    ``input_size`` the dataset's own, which the pipeline then resizes (bilinear) and makes RGB."""
    return FAMILIES[spec.family].image_shape if spec.input_size else tuple(description.input_shape)


def pixel_statistics(spec: RunSpec) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and standard deviation on the 0-255 scale the decoded images have."""
    family = FAMILIES[spec.family]
    return np.float32(family.mean) * 255, np.float32(family.std) * 255


def _shards(spec: RunSpec, split: str) -> list[Path]:
    shards = shard_dirs(Path(spec.data_dir), split)
    if not shards:
        words = {"train": "training"}.get(split, split)
        raise FileNotFoundError(f"{spec.data_dir}: no {words} shards {split}-*-of-* (is the dataset converted?)")
    return shards


def train_shards(spec: RunSpec) -> list[Path]:
    return _shards(spec, "train")


def test_shards(spec: RunSpec) -> list[Path]:
    """The test split's shards, which an accuracy run evaluates on."""
    return _shards(spec, "test")


def image_record_options(spec: RunSpec, description: networks.Network, workers: int = 1) -> dict:
    """``mx.io.ImageRecordIter``'s settings for a run's training shards (MXNet today's and the thesis's): random
    crops, colour images mirrored, normalised per channel, in ``preprocess_threads`` threads; with a case's
    ``input_size``, the shorter side resized (bilinear) to it, grey images decoded as colour ones. A shard's last
    batch is completed from its start (``round_batch``; without it MXNet 1.9 fills the rest with zero images
    labelled 0 and reports no padding). Of ``workers`` processes, each reads its share of the batch."""
    channels = description.input_shape[0]
    # a grey image decoded as RGB for a case's input_size: its statistics for every channel
    mean, std = (np.resize(values, channels) for values in pixel_statistics(spec))
    normalise = {f"{kind}_{colour}": float(value) for kind, values in (("mean", mean), ("std", std))
                 for colour, value in zip("rgb", values)}
    resize = {"resize": spec.input_size} if spec.input_size else {}
    return dict(data_shape=description.input_shape, batch_size=spec.batch_size_global // workers, shuffle=True,
                rand_crop=True, rand_mirror=stored_shape(spec, description)[0] == 3,
                preprocess_threads=spec.threads, seed=spec.seed, round_batch=True, **normalise, **resize)


def evaluation_options(training: dict) -> dict:
    """The test split's: stored order, the centre crop, no mirror."""
    return {**training, "shuffle": False, "rand_crop": False, "rand_mirror": False}
