"""The CNTK side of a CNTK run, under the CPython 3.6 that CNTK 2.7's wheels need.

It imports nothing of dlbench (whose modules need a newer Python), only the standard library,
numpy and cntk, and is written for Python 3.6 (tests check that with vermin). The runner, on the
workflow's Python, translates the network description into a plan of CNTK layer calls
(:mod:`dlbench.backends.cntk`) and drives this worker over two pipes::

    python3.6 cntk_worker.py CONFIG.json COMMAND_FD REPLY_FD   train: one "step" line, one reply each
    python3.6 cntk_worker.py --describe                         the Python and package versions
    python3.6 cntk_worker.py --environment OUTPUT.json          a conda environment's status file

Replies are JSON lines: the first says ready (with the parameter count) or unavailable.
"""
import glob
import json
import os
import platform
import sys

import numpy as np

CNTK_GPU_CUDA = "10.0"  # what CNTK 2.7's cntk-gpu wheels were built with


def describe():
    import cntk
    # cntk and cntk-gpu install the same package; only the distribution's name tells them apart.
    gpu = glob.glob(os.path.join(os.path.dirname(os.path.dirname(cntk.__file__)), "cntk_gpu-*.dist-info"))
    return {"python": platform.python_version(), "framework_version": cntk.__version__,
            "packages": {"cntk": cntk.__version__, "numpy": np.__version__},
            "cuda_build": CNTK_GPU_CUDA if gpu else None}


def build(node, x):
    """Apply one plan node (see dlbench.backends.cntk.CntkPlanner) to the CNTK variable ``x``."""
    import cntk as C
    from cntk import layers
    op = node["op"]
    if op == "sequential":
        for child in node["children"]:
            x = build(child, x)
        return x
    if op == "concat":
        return C.splice(*[build(branch, x) for branch in node["branches"]], axis=0)
    if op == "residual":
        shortcut = x if node["shortcut"] is None else build(node["shortcut"], x)
        return C.plus(build(node["body"], x), shortcut)
    if op == "conv":
        pad = node["explicit_pad"]
        if pad:
            x = C.pad(x, pattern=[(0, 0), (pad, pad), (pad, pad)])
        kernel, stride = node["kernel"], node["stride"]
        return layers.Convolution2D((kernel, kernel), node["filters"], pad=node["pad"], strides=(stride, stride),
                                    bias=node["bias"], init=C.glorot_uniform())(x)
    if op == "batchnorm":
        return layers.BatchNormalization(map_rank=1, epsilon=node["epsilon"])(x)
    if op == "relu":
        return C.relu(x)
    if op == "maxpool":
        kernel, stride = node["kernel"], node["stride"]
        return C.pooling(x, C.MAX_POOLING, (kernel, kernel), strides=(stride, stride), auto_padding=[node["pad"]],
                         ceil_out_dim=node["ceil_out_dim"])
    if op == "globalavgpool":
        return layers.GlobalAveragePooling()(x)
    if op == "flatten":
        return C.reshape(x, (-1,))
    if op == "dense":
        return layers.Dense(node["units"], bias=node["bias"], init=C.glorot_uniform())(x)
    if op == "dropout":
        return layers.Dropout(dropout_rate=node["rate"])(x)
    raise ValueError(f"unknown plan node {op!r}")


def trainable_parameters(model):
    return int(sum(np.prod(parameter.shape) for parameter in model.parameters))


class Unavailable(Exception):
    pass


def select_device(gpus):
    import cntk as C
    if gpus == 0:
        return C.device.cpu()
    if gpus > 1:
        raise Unavailable("multi-GPU CNTK (a data_parallel_distributed_learner under mpiexec) "
                          "is not wired into the runner yet")
    if not any(device.type() == C.device.DeviceKind.GPU for device in C.device.all_devices()):
        raise Unavailable("CNTK sees no GPU (C.device.all_devices())")
    return C.device.gpu(0)


def minibatch_source(config, features, labels):
    """CNTK's ImageDeserializer on the map file, as CNTK's CIFAR-10 and ImageNet examples read it:
    random crop to the input (with its flip) for colour images, scale, mean image subtracted."""
    import cntk as C
    from cntk.io import transforms
    channels, height, width = config["input_shape"]
    steps = [transforms.crop(crop_type="randomside", crop_size=height)] if channels == 3 else []
    steps += [transforms.scale(width=width, height=height, channels=channels, interpolations="linear"),
              transforms.mean(config["mean_file"])]
    deserializer = C.io.ImageDeserializer(config["map_file"], C.io.StreamDefs(
        features=C.io.StreamDef(field="image", transforms=steps),
        labels=C.io.StreamDef(field="label", shape=config["num_classes"])))
    try:
        source = C.io.MinibatchSource(deserializer, randomize=True, max_sweeps=C.io.INFINITELY_REPEAT)
    except RuntimeError as error:  # the reader's OpenCV 3.1 needs Ubuntu 16.04's libjpeg8, libpng12, ...
        if "Plugin not found" not in str(error):
            raise
        raise Unavailable("CNTK's image reader cannot be loaded: " + str(error).splitlines()[0])
    input_map = {features: source.streams.features, labels: source.streams.labels}
    batch = config["batch_size"]
    return lambda: source.next_minibatch(batch, input_map=input_map)


def resident_batch(config, features, labels, device):
    """The synthetic batch (already normalised, written by the runner) as CNTK values, kept resident."""
    import cntk as C
    images = np.load(config["synthetic_images"])
    one_hot = np.eye(config["num_classes"], dtype=np.float32)[np.load(config["synthetic_labels"])]
    batch = {features: C.Value(batch=images, device=device), labels: C.Value(batch=one_hot, device=device)}
    return lambda: batch


class Worker:
    def __init__(self, config):
        import cntk as C
        device = select_device(config["gpus"])
        C.device.try_set_default_device(device)
        C.cntk_py.set_max_num_cputhreads(config["threads"])  # else CNTK takes every core of the machine
        features = C.input_variable(tuple(config["input_shape"]), np.float32)
        labels = C.input_variable(config["num_classes"], np.float32)
        scale = config["input_scale"]  # 1 / std per channel in the reader's (BGR) order; None: normalised
        scaled = C.element_times(features, C.constant(np.array(scale, np.float32).reshape(-1, 1, 1))) \
            if scale else features
        self.model = build(config["plan"], scaled)
        loss = C.cross_entropy_with_softmax(self.model, labels)
        learner = C.momentum_sgd(self.model.parameters, C.learning_parameter_schedule(config["learning_rate"]),
                                 C.momentum_schedule(0.9))
        self.trainer = C.Trainer(self.model, loss, [learner])
        if config["synthetic_images"]:
            self.next_batch = resident_batch(config, features, labels, device)
        else:
            self.next_batch = minibatch_source(config, features, labels)
        self.loss = None

    def step(self):
        self.trainer.train_minibatch(self.next_batch())
        # Reading the loss back waits for the step's device work, as Caffe's solver does.
        self.loss = float(self.trainer.previous_minibatch_loss_average)


def serve(config_path, command_fd, reply_fd):
    commands, replies = os.fdopen(command_fd, "r"), os.fdopen(reply_fd, "w")

    def reply(**message):
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    with open(config_path) as stream:
        config = json.load(stream)
    try:
        worker = Worker(config)
    except Unavailable as error:
        reply(unavailable=str(error))
        return 0
    reply(ready=True, parameters=trainable_parameters(worker.model))
    for command in commands:
        command = command.strip()
        if command == "step":
            worker.step()
            reply(done=True)
        elif command == "loss":
            reply(loss=worker.loss)
        else:
            raise ValueError(f"unknown command {command!r}")
    return 0


def main(argv):
    if argv == ["--describe"]:
        print(json.dumps(describe()))
        return 0
    if argv[:1] == ["--environment"]:  # the runner uses the workflow's Python, this one the worker
        describe()
        with open(argv[1], "w") as stream:
            json.dump({"status": "ok", "python": None, "worker_python": sys.executable, "reason": ""}, stream)
        return 0
    config_path, command_fd, reply_fd = argv
    return serve(config_path, int(command_fd), int(reply_fd))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
