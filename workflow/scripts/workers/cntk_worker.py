"""The CNTK side of a CNTK run, under the CPython 3.6 that CNTK 2.7's wheels need.

It imports nothing of dlbench (whose modules need a newer Python) but its Python 3.6 modules, only the standard
library, numpy and cntk, and is written for Python 3.6 (tests check that with vermin). The runner, on the
workflow's Python, translates the network description into a plan of CNTK layer calls
(:mod:`dlbench.backends.cntk`) and drives this worker over a socket that it listens on, with the commands of
worker_protocol.py::

    python3.6 cntk_worker.py CONFIG.json SOCKET       SOCKET: a path, @NAME in the abstract namespace,
                                                      or tcp:HOST:PORT from other nodes
    python3.6 cntk_worker.py --describe               the Python and package versions
    python3.6 cntk_worker.py --environment OUTPUT.json  a conda environment's status file

A run on several devices starts one worker per device under ``mpiexec`` (CNTK's data-parallel
learner is MPI's): each is a rank, trains on its share of the global batch, and connects to the
runner on its own, which sends each rank the same commands.
"""
import glob
import os
import platform
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside it, also where it is loaded by its path
from worker_protocol import InputClock, Unavailable, dlbench_module, main, store_evaluation

CNTK_GPU_CUDA = {"2.7": "10.0", "2.5": "9.0"}  # what each release's cntk-gpu wheels were built with


def describe():
    import cntk
    # cntk and cntk-gpu install the same package; only the distribution's name tells them apart.
    gpu = glob.glob(os.path.join(os.path.dirname(os.path.dirname(cntk.__file__)), "cntk_gpu-*.dist-info"))
    return {"python": platform.python_version(), "framework_version": cntk.__version__,
            "packages": {"cntk": cntk.__version__, "numpy": np.__version__},
            "cuda_build": CNTK_GPU_CUDA[re.match(r"\d+\.\d+", cntk.__version__).group()] if gpu else None}


def primitives(x):
    """The uids of the primitive functions (inside blocks too) that compute ``x``: the node names of CNTK's
    profiler (``Convolution24`` in ``Convolution24Forward``)."""
    import cntk as C
    if not isinstance(x, C.Function) and not x.is_output:  # the network's input
        return set()
    root = x if isinstance(x, C.Function) else x.owner  # an output variable: the function it is the output of
    found = C.logging.graph.depth_first_search(root, lambda n: isinstance(n, C.Function) and n.is_primitive, depth=-1)
    return {function.uid for function in found}


def build(node, x, layers=None):
    """Apply one plan node (see dlbench.backends.cntk.CntkPlanner) to the CNTK variable ``x``; with ``layers``,
    record in it the primitive functions each named leaf added (its profiler's nodes)."""
    built = apply_node(node, x, layers)
    if layers is not None and node.get("name"):
        layers[node["name"]] = sorted(primitives(built) - primitives(x))
    return built


def apply_node(node, x, layers):
    import cntk as C
    from cntk import layers as cntk_layers
    op = node["op"]
    if op == "sequential":
        for child in node["children"]:
            x = build(child, x, layers)
        return x
    if op == "concat":
        return C.splice(*[build(branch, x, layers) for branch in node["branches"]], axis=0)
    if op == "residual":
        shortcut = x if node["shortcut"] is None else build(node["shortcut"], x, layers)
        return C.plus(build(node["body"], x, layers), shortcut)
    if op == "conv":
        pad = node["explicit_pad"]
        if pad:
            x = C.pad(x, pattern=[(0, 0), (pad, pad), (pad, pad)])
        kernel, stride = node["kernel"], node["stride"]
        return cntk_layers.Convolution2D((kernel, kernel), node["filters"], pad=node["pad"], strides=(stride, stride),
                                    bias=node["bias"], init=C.glorot_uniform())(x)
    if op == "batchnorm":
        return cntk_layers.BatchNormalization(map_rank=1, epsilon=node["epsilon"])(x)
    if op == "relu":
        return C.relu(x)
    if op == "maxpool":
        kernel, stride = node["kernel"], node["stride"]
        return C.pooling(x, C.MAX_POOLING, (kernel, kernel), strides=(stride, stride), auto_padding=[node["pad"]],
                         ceil_out_dim=node["ceil_out_dim"])
    if op == "globalavgpool":
        return cntk_layers.GlobalAveragePooling()(x)
    if op == "flatten":
        return C.reshape(x, (-1,))
    if op == "dense":
        return cntk_layers.Dense(node["units"], bias=node["bias"], init=C.glorot_uniform())(x)
    if op == "dropout":
        return cntk_layers.Dropout(dropout_rate=node["rate"])(x)
    if op == "lstm":
        return C.sequence.last(cntk_layers.Recurrence(cntk_layers.LSTM(node["units"], init=C.glorot_uniform()))(x))
    raise ValueError(f"unknown plan node {op!r}")


def input_of(shape):
    """The network's input: a tensor of an image's shape, or for (steps, features) a sequence of feature
    vectors on CNTK's dynamic sequence axis (a batch of them is fed as one (batch, steps, features) array)."""
    import cntk as C
    if len(shape) == 2:
        return C.sequence.input_variable(shape[1], np.float32)
    return C.input_variable(tuple(shape), np.float32)


def trainable_parameters(model):
    return int(sum(np.prod(parameter.shape) for parameter in model.parameters))


def select_device(gpus, rank):
    """The CPU, or the rank's own GPU: one rank per GPU, as CNTK's data-parallel training has it."""
    import cntk as C
    if gpus == 0:
        return C.device.cpu()
    found = sum(device.type() == C.device.DeviceKind.GPU for device in C.device.all_devices())
    if found <= rank:
        raise Unavailable(f"CNTK sees {found} GPU(s) (C.device.all_devices()); rank {rank} needs GPU {rank}")
    return C.device.gpu(rank)


def image_source(config, map_file, train):
    """CNTK's ImageDeserializer on a map file, as CNTK's CIFAR-10 and ImageNet examples read it: for training,
    a random crop to the stored size (with its flip) of colour images, in random order, sweep after sweep; for
    evaluation, the centre crop, in the map file's order, one sweep; then scale to the input, mean image
    subtracted; decoded on one thread or, with ``multithreaded_reader`` (the run has loader workers), on several.
    Where a case resizes (input_size), the mean image (the stored size's) is subtracted before the
    scale, linear interpolation as the other frameworks' bilinear, to the input's channels (grey made RGB)."""
    import cntk as C
    from cntk.io import transforms
    channels, height, width = config["input_shape"]
    stored_channels, stored_height, stored_width = config["stored_shape"]
    crop = "randomside" if train else "center"
    steps = [transforms.crop(crop_type=crop, crop_size=stored_height)] if stored_channels == 3 else []
    scale = transforms.scale(width=width, height=height, channels=channels, interpolations="linear")
    mean = transforms.mean(config["mean_file"])
    steps += [mean, scale] if (stored_height, stored_width) != (height, width) else [scale, mean]
    deserializer = C.io.ImageDeserializer(map_file, C.io.StreamDefs(
        features=C.io.StreamDef(field="image", transforms=steps),
        labels=C.io.StreamDef(field="label", shape=config["num_classes"])))
    # The reader's OpenCV 3.1 needs Ubuntu 16.04's libjpeg8, libpng12, ..., installed in the environment.
    missing = dlbench_module("envs/image_reader_libraries").preload(sys.prefix)
    try:
        return C.io.MinibatchSource(deserializer, randomize=train, max_sweeps=C.io.INFINITELY_REPEAT if train else 1,
                                    multithreaded_deserializer=config["multithreaded_reader"])
    except RuntimeError as error:
        if "Plugin not found" not in str(error):
            raise
        raise Unavailable("CNTK's image reader cannot be loaded: {}{}".format(
            str(error).splitlines()[0], f" ({missing})" if missing else ""))


def minibatch_source(config, features, labels, rank):
    """The rank's share of each training batch from the training map file."""
    source = image_source(config, config["map_file"], train=True)
    input_map = {features: source.streams.features, labels: source.streams.labels}
    batch, ranks = config["batch_size"] // config["ranks"], config["ranks"]
    return lambda: source.next_minibatch(batch, input_map=input_map, num_data_partitions=ranks,
                                         partition_index=rank)


def resident_batch(config, features, labels, device, rank):
    """The rank's share of the synthetic batch (already normalised, written by the runner) as CNTK
    values, kept resident."""
    import cntk as C
    share = slice(rank * config["batch_size"] // config["ranks"], (rank + 1) * config["batch_size"] // config["ranks"])
    images = np.load(config["synthetic_images"])[share]
    one_hot = np.eye(config["num_classes"], dtype=np.float32)[np.load(config["synthetic_labels"])[share]]
    batch = {features: C.Value(batch=images, device=device), labels: C.Value(batch=one_hot, device=device)}
    return lambda: batch


def make_learner(rule, parameters, learning_rate):
    """The network's optimizer (dlbench.networks.Optimizer, as a dict). CNTK's rmsprop scales each step by
    inc or dec (as the gradient keeps or flips its sign) within [min, max]; [1, 1 + 1e-6] (CNTK wants max above
    min) keeps it plain RMSProp, to a millionth. Its rate is per sample (minibatch_size=1): with CNTK's
    default (IGNORE) its RMSProp steps a batch's-size fraction of the rate, where momentum SGD's rate is the
    mean gradient's (tests/unit/backends/test_backends.py steps both on a batch of 4)."""
    import cntk as C
    if rule["kind"] == "rmsprop":
        return C.rmsprop(parameters, C.learning_parameter_schedule(learning_rate, minibatch_size=1),
                         gamma=rule["rho"], inc=1.5, dec=0.5, max=1.0 + 1e-6, min=1.0, need_ave_multiplier=False)
    return momentum_sgd(parameters, learning_rate, rule["momentum"])


def momentum_sgd(parameters, learning_rate, momentum):
    """SGD with the classical momentum of the other frameworks (v = momentum v + g, w -= rate v), not CNTK's
    unit-gain momentum (v = momentum v + (1 - momentum) g), which its global default could switch on."""
    import cntk as C
    return C.momentum_sgd(parameters, C.learning_parameter_schedule(learning_rate), C.momentum_schedule(momentum),
                          unit_gain=False)


class Worker:
    def __init__(self, config, rank):
        import cntk as C
        self.distributed = config["ranks"] > 1
        device = select_device(config["gpus"], rank)
        C.device.try_set_default_device(device)
        C.cntk_py.set_max_num_cputhreads(config["threads"])  # else CNTK takes every core of the machine
        features = input_of(config["input_shape"])
        labels = C.input_variable(config["num_classes"], np.float32)
        scale = config["input_scale"]  # 1 / std per channel in the reader's (BGR) order; None: normalised
        scaled = C.element_times(features, C.constant(np.array(scale, np.float32).reshape(-1, 1, 1))) \
            if scale else features
        self.layers = {} if config["profile"] else None  # each named leaf's profiler nodes
        self.model = build(config["plan"], scaled, self.layers)
        self.config, self.features, self.labels, self.device, self.rank = config, features, labels, device, rank
        loss = C.cross_entropy_with_softmax(self.model, labels)
        learner = make_learner(config["optimizer"], self.model.parameters, config["learning_rate"])
        if self.distributed:  # gradients summed over the ranks (MPI all-reduce) before each update
            learner = C.train.distributed.data_parallel_distributed_learner(learner)
        self.trainer = C.Trainer(self.model, loss, [learner])
        self.next_batch = InputClock(resident_batch(config, features, labels, device, rank) if config[
            "synthetic_images"] else minibatch_source(config, features, labels, rank))
        self.parameters, self.loss = trainable_parameters(self.model), None

    @property
    def input_wait(self):
        return self.next_batch.seconds

    def step(self):
        self.trainer.train_minibatch(self.next_batch())
        # Reading the loss back waits for the step's device work, as Caffe's solver does.
        self.loss = float(self.trainer.previous_minibatch_loss_average)

    def prepare_inference(self, batch_size):
        """A resident batch of the run's input for forward passes: the first ``batch_size`` images of its next."""
        import cntk as C
        images = self.next_batch()[self.features].asarray()[:batch_size]
        self.inference_input = {self.features: C.Value(batch=np.ascontiguousarray(images), device=self.device)}

    def forward(self):
        # eval: no gradient, dropout off, batch norm on its running statistics; the output comes back as NumPy
        self.model.eval(self.inference_input)

    def evaluate(self, directory):
        """The network's logits (eval: dropout off, batch norm on its running statistics) and the labels of every
        image of the test map file, a batch of the case's size at a time, stored in ``directory`` as .npy files
        (the runner scores them as every framework's); their paths."""
        source = image_source(self.config, self.config["test_map_file"], train=False)
        input_map = {self.features: source.streams.features, self.labels: source.streams.labels}
        logits, labels = [], []
        while True:
            batch = source.next_minibatch(self.config["batch_size"], input_map=input_map)
            if not batch:  # the one sweep is over
                break
            output = np.asarray(self.model.eval({self.features: batch[self.features]}), np.float32)
            logits.append(output.reshape(len(output), -1))
            labels.append(np.asarray(batch[self.labels].asarray()).reshape(len(output), -1).argmax(axis=1))
        return store_evaluation(directory, logits, labels, self.config["num_classes"])

    def start_profiler(self, directory):
        """CNTK's profiler, with its per-node timing: each primitive node's forward and backward a pair of events
        in its detail log, inside each step's "_Minibatch Iteration" (sync_gpu: a GPU node's event ends when its
        kernels have)."""
        import cntk as C
        self.profiler_directory = os.path.join(directory, f"profiler-{self.rank}")  # each rank its own log
        C.debugging.set_node_timing(True)
        C.debugging.start_profiler(dir=self.profiler_directory, sync_gpu=True)
        C.debugging.enable_profiler()

    def stop_profiler(self):
        """The detail log's path (chrome://tracing's JSON), and the nodes of each layer."""
        import cntk as C
        C.debugging.disable_profiler()
        C.debugging.stop_profiler()
        # CNTK 2.7's set_node_timing(False) calls cntk_py.disable_node_timing, which its library spells thus
        C.cntk_py.disable_node_timeing()
        (trace,) = glob.glob(os.path.join(self.profiler_directory, "*_detail_*.json"))
        return {"trace": trace, "layers": self.layers}

    def weights_sum(self):
        """A fingerprint of the weights, the same on every rank of a data-parallel group."""
        return float(sum(np.sum(parameter.value, dtype=np.float64) for parameter in self.model.parameters))

    def finish(self):
        if self.distributed:
            import cntk as C
            C.train.distributed.Communicator.finalize()


def install():
    """The image reader's libraries; synthetic data needs no reader, and its runs say why they cannot read."""
    try:
        dlbench_module("envs/image_reader_libraries").install(sys.prefix, sys.stdout)
    except RuntimeError as error:
        print(error)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], describe, Worker, install))
