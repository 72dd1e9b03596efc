"""Run by tests/unit/backends/test_backends.py inside TensorFlow's venv: read the TFRecords that the workflow's
environment wrote back with tf.data.TFRecordDataset and compare them with the source; take one
batch from the TensorFlow backend's input pipeline; print what was found as JSON."""
import json
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf
from dlbench import datasets, formats, networks
from dlbench.backends import tensorflow as backend
from dlbench.spec import RunSpec

FEATURES = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
            "image/class/label": tf.io.FixedLenFeature([], tf.int64),
            "image/height": tf.io.FixedLenFeature([], tf.int64),
            "image/width": tf.io.FixedLenFeature([], tf.int64)}


def read(directory: Path, split: str):
    files = [str(shard / formats.TFRECORD_FILE) for shard in formats.shard_dirs(directory, split)]
    for record in tf.data.TFRecordDataset(files):
        example = tf.io.parse_single_example(record, FEATURES)
        image = tf.io.decode_image(example["image/encoded"], expand_animations=False).numpy().transpose(2, 0, 1)
        assert image.shape[1:] == (example["image/height"], example["image/width"])
        yield image, int(example["image/class/label"])


root, result = Path(sys.argv[1]), {}
for family, network in (("mnist", "lenet"), ("cifar10", "resnet50"), ("imagenet", "alexnet")):
    directory = root / family / "tfrecord"
    if family != "imagenet":
        images, labels = datasets.load_split(family, root / family / "data", "test")
        order = formats.shuffled_order(len(images), 7)
        stored = list(read(directory, "test"))
        result[f"{family}/test"] = {"count": [len(images), len(stored)],
                                    "equal": all(np.array_equal(image, images[i]) and label == labels[i]
                                                 for (image, label), i in zip(stored, order))}
    else:
        result["imagenet/train"] = {"shapes": sorted({image.shape for image, _ in read(directory, "train")})}
    description = networks.network(network, datasets.FAMILIES[family].sized_for)
    spec = RunSpec("tensorflow", f"{family}-generated", network, "cpu", 1, 4, 1, 0, 0.01, 2, data_dir=str(directory))
    batch_images, batch_labels = next(iter(backend.dataset(spec, description)))
    mean, std = datasets.FAMILIES[family].mean, datasets.FAMILIES[family].std
    pixels = batch_images.numpy() * np.float32(std) * 255 + np.float32(mean) * 255  # undo the normalisation
    result[f"{family}/pipeline"] = {"images": list(batch_images.shape), "dtype": batch_images.dtype.name,
                                    "labels": batch_labels.numpy().tolist(),
                                    "pixel_range": [float(pixels.min()), float(pixels.max())]}
print(json.dumps(result))
