"""Run by tests/unit/tasks/test_accuracy.py inside a framework's environment: the first test batch of a generated
dataset (MNIST, or the family named third) as the framework's evaluation pipeline hands it to a ResNet-18 for
a case's input_size 224 (resized, made RGB, normalised), as NCHW float32; printed as JSON lists (a few images)."""
import json
import sys

import numpy as np
from dlbench import datasets
from dlbench.spec import RunSpec

framework, data_dir, family = sys.argv[1], sys.argv[2], (sys.argv[3:] or ["mnist"])[0]
spec = RunSpec(framework, f"{family}-generated", "resnet18", "cpu", 1, 4, 4, 0, 0.01, 2, data_dir=data_dir,
               task="accuracy", epochs=1, input_size=224)
description = datasets.description("resnet18", family, 224)
if framework == "pytorch":
    import torch
    from dlbench.backends import pytorch

    batches = pytorch.Batches(spec, description, torch.device("cpu"))
    images = next(batches.test())[0].numpy()
elif framework == "tensorflow":
    from dlbench.backends import tensorflow

    images = next(iter(tensorflow.test_dataset(spec, description)))[0].numpy().transpose(0, 3, 1, 2)
elif framework == "caffe":
    from dlbench.backends import caffe

    net = caffe.Harness(spec, description).test_net()[0]
    net.forward()
    images = net.blobs["data"].data
elif framework == "mxnet":
    from dlbench.backends import mxnet

    images = next(mxnet.RecordBatches(spec, description).test())[0].asnumpy()
else:
    from dlbench import backends
    from dlbench.backends import inputs
    from dlbench.backends.lmdb_records import LmdbRecords

    keras_api = backends.load(framework)  # sets KERAS_BACKEND before Keras is imported

    records = LmdbRecords(inputs.test_shards(spec), inputs.stored_shape(spec, description), augment=False)
    stored = records.batch(list(range(4)))[0]
    images = keras_api.normalised(stored, *inputs.pixel_statistics(spec), description.input_shape).transpose(0, 3, 1, 2)
print(json.dumps({"shape": list(images.shape), "images": np.asarray(images, np.float32).tolist()}))
