"""Run by tests/unit/backends/test_backends.py inside a framework's environment: two steps of the backend's own
optimizer for each registered rule (dlbench.networks.Optimizer) on loss = w . x from w = 0 (a constant
gradient x); print {rule kind: w} as JSON."""
import json
import sys

import numpy as np
from dlbench import networks

framework = sys.argv[1]
RATES = {"sgd": 0.1, "rmsprop": 0.01}
gradient = np.array([1.0, 2.0], np.float32)
found = {}
for rule in (networks.SGD_MOMENTUM, networks.RMSPROP):
    rate = RATES[rule.kind]
    if framework == "pytorch":
        import torch
        from dlbench.backends.pytorch import optimizer

        weights = torch.zeros(2, requires_grad=True)
        step = optimizer(rule, [weights], rate)
        for _ in range(2):
            step.zero_grad()
            (weights * torch.from_numpy(gradient)).sum().backward()
            step.step()
        found[rule.kind] = weights.tolist()
    elif framework == "keras":
        import keras
        from dlbench.backends.keras_layers import keras_optimizer

        # a weight of a described layer: its update runs in the layer's scope, which changes no number
        weights = keras.Variable(np.zeros(2, np.float32), name="dense1")
        step = keras_optimizer(rule, rate, ["dense1"])
        for _ in range(2):
            step.apply_gradients([(keras.ops.convert_to_tensor(gradient), weights)])
        found[rule.kind] = keras.ops.convert_to_numpy(weights).tolist()
    elif framework == "mxnet":
        import mxnet as mx
        from dlbench.backends.mxnet import optimizer

        kind, options = optimizer(rule, rate)
        update = mx.optimizer.get_updater(mx.optimizer.create(kind, **options))
        weights = mx.nd.zeros(2)
        for _ in range(2):
            update(0, mx.nd.array(gradient), weights)
        found[rule.kind] = weights.asnumpy().tolist()
    elif framework == "caffe":
        import tempfile
        from pathlib import Path

        import caffe
        from caffe.proto import caffe_pb2
        from dlbench.backends.caffe import input_layer, solver_rule
        from google.protobuf import text_format

        net = caffe_pb2.NetParameter(layer=[input_layer("x", (1, 2))])
        net.layer.add(name="w", type="InnerProduct", bottom=["x"], top=["loss"], loss_weight=[1.0],
                      inner_product_param=caffe_pb2.InnerProductParameter(
                          num_output=1, bias_term=False, weight_filler=caffe_pb2.FillerParameter(type="constant")))
        with tempfile.TemporaryDirectory() as scratch:
            Path(scratch, "net.prototxt").write_text(text_format.MessageToString(net))
            Path(scratch, "solver.prototxt").write_text(text_format.MessageToString(caffe_pb2.SolverParameter(
                train_net=str(Path(scratch, "net.prototxt")), base_lr=rate, lr_policy="fixed", max_iter=2,
                display=0, snapshot_after_train=False, **solver_rule(rule))))
            solver = caffe.get_solver(str(Path(scratch, "solver.prototxt")))
        solver.net.blobs["x"].data[...] = gradient  # an Input blob keeps what it is given
        solver.step(2)
        found[rule.kind] = solver.net.params["w"][0].data.ravel().tolist()
print(json.dumps(found))
