"""What every backend's input pipeline shares, so that all frameworks see the same data.

Synthetic mode: one resident batch of random pixels (the same bytes in every framework), fed
to every step, so that the run measures compute alone, as tf_cnn_benchmarks' synthetic data.
Real and generated data: the training shards of the dataset in the framework's own format.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import networks
from ..datasets import FAMILIES
from ..formats import shard_dirs
from ..spec import RunSpec


def synthetic_batch(spec: RunSpec, description: networks.Network) -> tuple[np.ndarray, np.ndarray]:
    """uint8 images (N, C, H, W) and int64 labels of the global batch."""
    rng = np.random.default_rng(spec.seed)
    images = rng.integers(0, 256, (spec.batch_size_global, *description.input_shape), dtype=np.uint8)
    labels = rng.integers(0, description.num_classes, spec.batch_size_global, dtype=np.int64)
    return images, labels


def normalised_synthetic_batch(spec: RunSpec, description: networks.Network) -> tuple[np.ndarray, np.ndarray]:
    """The synthetic batch as the networks see it: float32 (N, C, H, W), per channel (x - mean) / std."""
    images, labels = synthetic_batch(spec, description)
    mean, std = pixel_statistics(spec)
    return (images.astype(np.float32) - mean.reshape(-1, 1, 1)) / std.reshape(-1, 1, 1), labels


def pixel_statistics(spec: RunSpec) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and standard deviation on the 0-255 scale the decoded images have."""
    family = FAMILIES[spec.family]
    return np.float32(family.mean) * 255, np.float32(family.std) * 255


def train_shards(spec: RunSpec) -> list[Path]:
    shards = shard_dirs(Path(spec.data_dir), "train")
    if not shards:
        raise FileNotFoundError(f"{spec.data_dir}: no training shards train-*-of-* (is the dataset converted?)")
    return shards
