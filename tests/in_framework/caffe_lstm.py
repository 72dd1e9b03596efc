"""Run by tests/unit/backends/test_backends.py in Caffe's environment: the LSTM network built for a batch of 3
different sequences, its weights random, its logits against a NumPy LSTM over the batch-major input
(Caffe's gate order: input, forget, output, cell). Prints {"largest_difference": ...} as JSON."""
import json
import tempfile
from pathlib import Path

import caffe
import numpy as np
from dlbench import networks
from dlbench.backends.caffe import input_layer, net_parameter
from google.protobuf import text_format

description = networks.network("lstm", "text")
batch, (steps, features) = 3, description.input_shape
with tempfile.TemporaryDirectory() as scratch:
    path = Path(scratch, "net.prototxt")
    path.write_text(text_format.MessageToString(
        net_parameter(description, [input_layer("data", (batch, steps, features))], batch, loss=False)[0]))
    net = caffe.Net(str(path), caffe.TEST)
rng = np.random.default_rng(0)
for blobs in net.params.values():
    for blob in blobs:
        blob.data[...] = rng.normal(0, 0.2, blob.data.shape)
inputs = rng.normal(0, 1, (batch, steps, features)).astype(np.float32)
net.blobs["data"].data[...] = inputs
logits = next(iter(net.forward().values()))
(input_weights, bias, recurrent_weights), (dense_weights, dense_bias) = [
    [blob.data for blob in blobs] for blobs in net.params.values()]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


units = recurrent_weights.shape[1]
state, cell = np.zeros((batch, units)), np.zeros((batch, units))
for step in range(steps):
    gates = inputs[:, step] @ input_weights.T + bias + state @ recurrent_weights.T
    entry, forget, output, candidate = np.split(gates, 4, axis=1)
    cell = sigmoid(forget) * cell + sigmoid(entry) * np.tanh(candidate)
    state = sigmoid(output) * np.tanh(cell)
expected = state @ dense_weights.T + dense_bias
print(json.dumps({"largest_difference": float(np.abs(logits - expected).max()), "shape": list(logits.shape)}))
