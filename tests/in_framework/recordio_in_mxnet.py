"""Run by tests/unit/formats/test_recordio.py inside the MXNet venv: write RecordIO with mxnet.recordio, read it
back with mxnet.recordio and with mx.io.ImageRecordIter, and report what differs from the source."""
import json
import sys
from pathlib import Path

import mxnet as mx
import numpy as np
from dlbench import datasets, formats
from dlbench.datasets import ilsvrc12

root, result = Path(sys.argv[1]), {}
for family in ("mnist", "cifar10"):
    data = root / family / "data"
    formats.convert("recordio", family, data, root / family / "recordio", seed=7, log=lambda line: None)
    for split in formats.SPLITS:
        images, labels = datasets.load_split(family, data, split)
        order = formats.shuffled_order(len(images), 7)
        read = list(formats.read_split("recordio", root / family / "recordio", split))
        shard = formats.shard_dirs(root / family / "recordio", split)[0]
        iterator = mx.io.ImageRecordIter(path_imgrec=str(shard / "data.rec"), path_imgidx=str(shard / "data.idx"),
                                         data_shape=images.shape[1:], batch_size=10, shuffle=False)
        native = [(image.asnumpy(), label.asnumpy()) for batch in iterator
                  for image, label in zip(batch.data[0], batch.label[0])]
        result[f"{family}/{split}"] = {
            "count": [len(images), len(read), len(native)],
            "format_level_equal": all(np.array_equal(image, images[i]) and label == labels[i]
                                      for (image, label), i in zip(read, order)),
            "image_record_iter_equal": all(np.array_equal(image, images[i]) and int(label) == labels[i]
                                           for (image, label), i in zip(native, order)),
            "lst": (shard / "data.lst").read_text().splitlines()[0],
        }
source = ilsvrc12.Source(root / "ilsvrc12" / "raw", root / "ilsvrc12" / "index")
shard = formats.Shard("recordio", "test", 0, 1, "jpeg", (3, 224, 224))
formats.write_shard(shard, source, root / "ilsvrc12" / shard.name, log=lambda line: None)
order = formats.shuffled_order(source.count("test"), 0)
errors, swapped, labels = [], [], []
for (image, label), i in zip(formats.module("recordio").read_shard(root / "ilsvrc12" / shard.name), order):
    expected = source.record("test", int(i))[1].astype(int)
    errors.append(float(np.abs(image - expected).mean()))
    swapped.append(float(np.abs(image - expected[::-1]).mean()))  # what a BGR/RGB mix-up would give
    labels.append(label)
result["ilsvrc12/test"] = {"count": [source.count("test"), len(errors)], "mean_abs_error_max": max(errors),
                           "channel_swap_error_min": min(swapped),
                           "labels_equal": labels == [source.index["test"][i][3] for i in order]}
print(json.dumps(result))
