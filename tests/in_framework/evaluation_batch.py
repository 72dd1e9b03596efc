"""Run by tests/unit/datasets/test_known_pixels.py in a framework's environment: the first batch of the test split
as the framework's own input pipeline delivers it to the network (normalised, in the framework's layout), and its
labels, printed as JSON. Usage: python evaluation_batch.py FRAMEWORK ARGUMENTS.json, the arguments being the run's
spec, and with "convert" a format this environment writes, from the unpacked dataset (CNTK: the worker's path and
its config instead, since its Python 3.6 imports no dlbench; this file is Python 3.6 too)."""
import importlib.util
import json
import os
import sys

import numpy as np


def cntk_batch(arguments):
    loaded = importlib.util.spec_from_file_location("cntk_worker", arguments["worker"])
    worker = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(worker)
    config = arguments["config"]
    os.chdir(os.path.dirname(config["test_map_file"]))  # its paths are relative, as the runner starts the worker
    source = worker.image_source(config, config["test_map_file"], train=False)
    batch = source.next_minibatch(config["batch_size"])
    images = batch[source.streams.features].asarray()
    return images.reshape(-1, *images.shape[-3:]), batch[source.streams.labels].asarray().reshape(
        len(images), -1).argmax(axis=1)


def dlbench_batch(framework, arguments):
    from dlbench import formats, networks
    from dlbench.spec import RunSpec

    spec = RunSpec(**arguments["spec"])
    if "convert" in arguments:  # a format this environment writes
        format_name, source = arguments["convert"]
        formats.convert(format_name, spec.family, source, spec.data_dir, seed=7, log=lambda line: None)
    description = networks.network(spec.network, spec.family)
    if framework == "pytorch":
        import torch
        from dlbench.backends.pytorch import Batches
        images, labels = next(Batches(spec, description, torch.device("cpu")).test())
        return images.numpy(), labels.numpy()
    if framework == "tensorflow":
        from dlbench.backends.tensorflow import test_dataset
        images, labels = next(iter(test_dataset(spec, description)))
        return images.numpy(), labels.numpy()
    if framework == "mxnet":
        from dlbench.backends.mxnet import RecordBatches
        images, labels = next(iter(RecordBatches(spec, description).test()))
        return images.asnumpy(), labels.asnumpy()
    if framework.startswith("keras-"):  # its backend chosen before Keras is imported
        from dlbench.backends import inputs, load
        from dlbench.backends.lmdb_records import LmdbRecords
        keras_api = load(framework)
        records = LmdbRecords(inputs.test_shards(spec), inputs.stored_shape(spec, description), augment=False)
        images, labels = records.batch(list(range(spec.batch_size_global)))
        mean, std = inputs.pixel_statistics(spec)
        return keras_api.normalised(images, mean, std, description.input_shape), labels
    if framework == "caffe":
        import caffe
        from dlbench.backends import caffe as backend
        from dlbench.backends import inputs
        from google.protobuf import text_format
        layers = backend.data_layers(spec, description, inputs.test_shards(spec)[0], train=False)
        path = arguments["scratch"] + "/data.prototxt"
        with open(path, "w") as prototxt:
            prototxt.write(text_format.MessageToString(backend.caffe_pb2.NetParameter(layer=layers)))
        net = caffe.Net(path, caffe.TEST)
        net.forward()
        return net.blobs["data"].data.copy(), net.blobs["label"].data.copy()
    raise ValueError(f"no test split reader for {framework}")


framework = sys.argv[1]
with open(sys.argv[2]) as arguments_file:
    arguments = json.load(arguments_file)
images, labels = cntk_batch(arguments) if framework == "cntk" else dlbench_batch(framework, arguments)
print(json.dumps({"images": np.asarray(images, np.float64).tolist(), "labels": np.asarray(labels, int).tolist()}))
