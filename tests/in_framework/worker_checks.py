"""Run with a worker environment's Python (the thesis's MXNet 1.2.0 or TensorFlow 1.9.0 on CPython 3.6, each with its
Keras 2, or PyTorch 1.0.0): that worker's own code (workers/<name>_worker.py, WORKER), loaded by its path.

    worker_checks.py WORKER parameters PLANS.json [BUILDER]
                                                    build every {case: [input shape, description plan]} (with the
                                                    worker's class BUILDER, where it has several); print
                                                    {case: [trainable parameters, output shape]} or
                                                    {case: "unavailable: why"}
    worker_checks.py WORKER optimizer RULES          two steps of the worker's optimizer for each rule of
                                                    {kind: [rule, rate]} on loss = w . x from w = 0 (a constant
                                                    gradient x); print {kind: w}
"""
import importlib.util
import json
import sys

spec = importlib.util.spec_from_file_location("worker", sys.argv[1])
worker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(worker)
GRADIENT = [1.0, 2.0]


def mxnet_built(plan, input_shape):
    import mxnet as mx
    net = worker.build(plan)
    net.initialize(mx.init.Xavier())
    output = net(mx.nd.zeros([2] + input_shape))  # Gluon's deferred shapes
    return worker.trainable_parameters(net), list(output.shape[1:])


def tensorflow_built(plan, input_shape):
    import tensorflow as tf
    with tf.Graph().as_default():
        channels, *area = input_shape  # NCHW, or (steps, features) for a sequence
        images = tf.zeros([2] + (area + [channels] if area and len(input_shape) == 3 else input_shape))
        builder = getattr(worker, sys.argv[4]) if len(sys.argv) > 4 else worker.Builder
        output = worker.network(plan, builder)(images, training=builder is worker.Builder)
        return worker.trainable_parameters(), output.shape.as_list()[1:]


def keras_built(plan, input_shape):
    model = worker.build(plan, input_shape)
    return worker.trainable_parameters(model), list(model.output_shape[1:])


def torch_built(plan, input_shape):
    import torch
    model = worker.build(plan).eval()
    with torch.no_grad():
        output = model(torch.zeros([2] + input_shape))
    return sum(parameter.numel() for parameter in model.parameters() if parameter.requires_grad), list(output.shape[1:])


def torch_steps(rule, rate):
    import torch
    weights = torch.zeros(2, requires_grad=True)
    optimizer = worker.optimizer(rule, [weights], rate)
    for _ in range(2):
        optimizer.zero_grad()
        (weights * torch.tensor(GRADIENT)).sum().backward()
        optimizer.step()
    return weights.detach().tolist()


def mxnet_steps(rule, rate):
    import mxnet as mx
    kind, options = worker.optimizer(rule, rate)
    update = mx.optimizer.get_updater(mx.optimizer.create(kind, **options))
    weights = mx.nd.zeros(2)
    for _ in range(2):
        update(0, mx.nd.array(GRADIENT), weights)
    return weights.asnumpy().tolist()


def tensorflow_steps(rule, rate):
    import tensorflow as tf
    with tf.Graph().as_default():
        weights = tf.Variable([0.0, 0.0])
        step = worker.optimizer(rule, rate).minimize(tf.reduce_sum(weights * tf.constant(GRADIENT)))
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for _ in range(2):
                session.run(step)
            return session.run(weights).tolist()


def keras_steps(rule, rate):
    """Keras's optimizer on one weight vector: loss = w . x (a Dense unit without bias, on the one input x)."""
    import numpy as np
    keras = worker.keras
    inputs = keras.layers.Input((len(GRADIENT),))
    model = keras.models.Model(inputs, keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")(inputs))
    # the target in the loss, at no weight: keras-mxnet binds only the labels its graph reads
    model.compile(worker.optimizer(rule, rate), loss=lambda target, output: output + 0 * target, **worker.placement(0))
    for _ in range(2):
        model.train_on_batch(np.array([GRADIENT], np.float32), np.zeros((1, 1), np.float32))
    return model.get_weights()[0][:, 0].tolist()


framework = ("torch" if hasattr(worker, "torch") else "keras" if hasattr(worker, "BACKEND")
             else "tensorflow" if hasattr(worker, "network") else "mxnet")
found = {}
if sys.argv[2] == "parameters":
    built = {"mxnet": mxnet_built, "tensorflow": tensorflow_built, "keras": keras_built,
             "torch": torch_built}[framework]
    with open(sys.argv[3]) as stream:
        plans = json.load(stream)
    for case, (input_shape, plan) in sorted(plans.items()):
        try:
            found[case] = list(built(plan, input_shape))
        except worker.Unavailable as error:
            found[case] = f"unavailable: {error}"
else:
    steps = {"mxnet": mxnet_steps, "tensorflow": tensorflow_steps, "keras": keras_steps,
             "torch": torch_steps}[framework]
    for kind, (rule, rate) in json.loads(sys.argv[3]).items():
        found[kind] = steps(rule, rate)
print(json.dumps(found))
if hasattr(worker, "exit_without_teardown"):  # MXNet's worker: its teardown can abort after a finished run's output
    worker.exit_without_teardown(0)
