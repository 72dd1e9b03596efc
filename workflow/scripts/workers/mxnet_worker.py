"""The MXNet side of a run of the thesis's MXNet (1.2.0, its Figure 4.3), under CPython 3.6, as the thesis ran it, and
of the releases between it and today's (1.4.1, 1.6.0: the same Gluon API).

It imports nothing of dlbench but its Python 3.6 modules, only the standard library, numpy and mxnet, and is written
for Python 3.6 (tests check that with vermin). The runner (:mod:`dlbench.backends.mxnet_worker`) sends the network
description as JSON (its layers' kinds and fields) and drives this worker with the commands of worker_protocol.py::

    python3.6 mxnet_worker.py CONFIG.json SOCKET
    python3.6 mxnet_worker.py --describe

The network is built as today's MXNet backend builds it (dlbench.backends.mxnet): Gluon blocks, hybridised with the
loss, Xavier (Glorot uniform) weights, gluon.Trainer over the run's devices (one process), ImageRecordIter on the
RecordIO shards. MXNet 1.2's hybridize() has no static_alloc or static_shape (1.3 added them).
"""
import glob
import os
import platform
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside it, also where it is loaded by its path
from worker_protocol import InputClock, Unavailable, dlbench_module, main, store_evaluation

# Before MXNet loads libgomp, as today's MXNet backend (dlbench.backends.mxnet) has it
os.environ.setdefault("OMP_WAIT_POLICY", "ACTIVE")
BULKING = "MXNET_EXEC_BULK_EXEC_TRAIN"  # dlbench.backends.mxnet_trace.BULKING
import mxnet as mx
from mxnet import autograd, gluon
from mxnet.gluon import nn
from mxnet.gluon.contrib.nn import HybridConcurrent


def describe():
    # mxnet and mxnet-cu90 install the same package; only the distribution's name tells the CUDA build
    site = os.path.dirname(os.path.dirname(mx.__file__))
    builds = [re.match(r"mxnet_cu(\d+)(\d)-", os.path.basename(path))
              for path in glob.glob(os.path.join(site, "mxnet_cu*-*.dist-info"))]
    cuda = next(("{}.{}".format(*found.groups()) for found in builds if found), None)
    return {"python": platform.python_version(), "framework_version": mx.__version__,
            "packages": {"mxnet": mx.__version__, "numpy": np.__version__}, "cuda_build": cuda}


class Residual(gluon.HybridBlock):
    def __init__(self, body, shortcut):
        super().__init__()
        with self.name_scope():
            self.body, self.shortcut = body, shortcut

    def hybrid_forward(self, F, x):
        return self.body(x) + (x if self.shortcut is None else self.shortcut(x))


class WithLoss(gluon.HybridBlock):
    """The network and its loss in one hybridised graph."""

    def __init__(self, net):
        super().__init__(prefix="")
        self.net, self.loss = net, gluon.loss.SoftmaxCrossEntropyLoss()

    def hybrid_forward(self, F, images, labels):
        return self.loss(self.net(images), labels)


def build(node):
    """One node of the description (dlbench.backends.worker.DescriptionPlanner) as a Gluon block."""
    op = node["op"]
    if op in ("sequential", "concat"):
        block = nn.HybridSequential() if op == "sequential" else HybridConcurrent(axis=1)
        with block.name_scope():
            block.add(*[build(child) for child in node["children" if op == "sequential" else "branches"]])
        return block
    if op == "residual":
        return Residual(build(node["body"]), node["shortcut"] and build(node["shortcut"]))
    layers = {
        "conv": lambda: nn.Conv2D(node["out_channels"], node["kernel"], node["stride"], node["padding"],
                                  use_bias=node["bias"]),
        "batchnorm": lambda: nn.BatchNorm(momentum=0.9, epsilon=node["eps"]),  # PyTorch's momentum 0.1
        "relu": lambda: nn.Activation("relu"),
        "maxpool": lambda: nn.MaxPool2D(node["kernel"], node["stride"], node["padding"], ceil_mode=node["ceil_mode"]),
        "globalavgpool": nn.GlobalAvgPool2D,
        "flatten": nn.Flatten,
        "dense": lambda: nn.Dense(node["out_features"], use_bias=node["bias"]),
        "dropout": lambda: nn.Dropout(node["rate"]),
    }
    if op == "lstm":
        if tuple(int(part) for part in mx.__version__.split(".")[:2]) < (1, 3):
            raise Unavailable(f"MXNet {mx.__version__[:3]}'s gluon.rnn.LSTM is no HybridBlock (1.3 made it one): it "
                              "cannot be hybridised with the network as today's MXNet backend's is")
        raise Unavailable("this worker builds no LSTM yet (MXNet 1.3 and later could hybridise gluon.rnn.LSTM as "
                          "today's MXNet backend does)")
    if op not in layers:
        raise ValueError(f"unknown description node {op!r}")
    return layers[op]()


def trainable_parameters(net):
    """Parameters with gradients (batch norm's running statistics have none)."""
    return int(sum(np.prod(parameter.shape) for parameter in net.collect_params().values()
                   if parameter.grad_req != "null"))


def contexts(gpus):
    """The CPU, or the run's GPUs, each tried (MXNet 1.2 cannot count them; a CPU build refuses any)."""
    if not gpus:
        return [mx.cpu()]
    try:
        mx.nd.zeros((1,), ctx=mx.gpu(gpus - 1)).wait_to_read()
    except mx.base.MXNetError as error:
        raise Unavailable(f"MXNet {mx.__version__} cannot use GPU {gpus - 1}: {str(error).strip().splitlines()[0]}")
    return [mx.gpu(index) for index in range(gpus)]


def optimizer(rule, learning_rate):
    """The network's optimizer (dlbench.networks.Optimizer, as a dict) as gluon.Trainer takes it."""
    if rule["kind"] == "rmsprop":
        return "rmsprop", {"learning_rate": learning_rate, "gamma1": rule["rho"], "epsilon": rule["epsilon"]}
    return "sgd", {"learning_rate": learning_rate, "momentum": rule["momentum"]}


def image_records(shard, options):
    return mx.io.ImageRecordIter(path_imgrec=shard["rec"], path_imgidx=shard["idx"], **options)


class Worker:
    def __init__(self, config, rank):
        self.config, self.contexts = config, contexts(config["gpus"])
        mx.random.seed(config["seed"])
        np.random.seed(config["seed"])
        self.net = build(config["plan"])
        self.net.initialize(mx.init.Xavier(), ctx=self.contexts)
        self.with_loss = WithLoss(self.net)
        self.with_loss.hybridize()
        self.net(mx.nd.zeros([1] + config["input_shape"], ctx=self.contexts[0]))  # Gluon's deferred shapes
        self.parameters = trainable_parameters(self.net)
        rule, settings = optimizer(config["optimizer"], config["learning_rate"])
        self.trainer = gluon.Trainer(self.net.collect_params(), rule, settings,
                                     kvstore="device" if len(self.contexts) > 1 else None)
        if config["synthetic_images"]:
            resident = self._split(mx.nd.array(np.load(config["synthetic_images"])),
                                   mx.nd.array(np.load(config["synthetic_labels"])))
            self.next_batch = InputClock(lambda: resident)
        else:
            record_shards = dlbench_module("backends/record_shards")  # today's MXNet backend's reading of them
            batches = record_shards.ShardBatches(config["shards"], lambda shard: image_records(
                shard, config["record_options"]), config["seed"])
            self.next_batch = InputClock(lambda: self._split(*batches.next()))
            self.test_batches = lambda: record_shards.test_batches(
                image_records(shard, config["test_options"]) for shard in config["test_shards"])
        self.loss = None

    @property
    def input_wait(self):
        return self.next_batch.seconds

    def _split(self, images, labels):
        return list(zip(gluon.utils.split_and_load(images, self.contexts),
                        gluon.utils.split_and_load(labels, self.contexts)))

    def step(self):
        parts = self.next_batch()
        with autograd.record():
            losses = [self.with_loss(images, labels) for images, labels in parts]
        autograd.backward(losses)
        self.trainer.step(self.config["batch_size"])
        # The step has finished when its update has: the next batch's fetch (ImageRecordIter recycles a batch on
        # the engine) then waits for nothing of it.
        mx.nd.waitall()
        self.loss = float(sum(loss.sum().asscalar() for loss in losses) / self.config["batch_size"])

    def prepare_inference(self, batch_size):
        """A resident batch of the run's input for forward passes: the first ``batch_size`` images of its next."""
        ((images, _),) = self.next_batch()
        self.inference_input = images[:batch_size]

    def forward(self):
        # outside autograd.record: no gradient, dropout off, batch norm's running statistics
        self.net(self.inference_input).wait_to_read()

    def evaluate(self, directory):
        """The network's logits and the labels of every test image, stored in ``directory`` as .npy files."""
        logits, labels = [], []
        for images, batch_labels in self.test_batches():
            logits.append(self.net(images.as_in_context(self.contexts[0])).asnumpy().astype(np.float32))
            labels.append(batch_labels.asnumpy().astype(np.int64))
        return store_evaluation(directory, logits, labels, self.config["num_classes"])

    def start_profiler(self, directory):
        """MXNet 1.2's profiler over the steps until it stops, as today's MXNet backend runs its own: the graph built
        again with bulking off, so that each operator is an event of the trace."""
        self.trace, self.bulking = os.path.join(directory, "trace.json"), os.environ.get(BULKING)
        self._rebuild("0")
        mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=self.trace)
        mx.profiler.set_state("run")

    def stop_profiler(self):
        """The trace's file, which the runner reads (dlbench.backends.mxnet_trace); the graph bulked again."""
        mx.nd.waitall()
        mx.profiler.set_state("stop")
        mx.profiler.dump()
        self._rebuild(self.bulking)
        return {"trace": self.trace}

    def _rebuild(self, bulking):
        """Hybridising again drops the cached graph: the next step builds it with this bulking setting."""
        if bulking is None:
            os.environ.pop(BULKING, None)
        else:
            os.environ[BULKING] = bulking
        self.with_loss.hybridize()

    def weights_sum(self):
        return float(sum(parameter.data().asnumpy().sum(dtype=np.float64)
                         for parameter in self.net.collect_params().values()))

    def finish(self):
        pass


def exit_without_teardown(code):
    """End the process once its output is out, without the interpreter's teardown: MXNet 1.5 and later can abort
    there as its engine's threads meet the library's static destructors ("terminate called without an active
    exception": 1.6.0, after building several networks, 1 exit in 2), which would turn a finished run into a crash."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    exit_without_teardown(main(sys.argv[1:], describe, Worker))
