"""The TensorFlow side of a run of the thesis's TensorFlow (1.9.0, its Figure 4.3), under CPython 3.6: a graph and a
session, as TensorFlow 1 programs ran; with the config's ``raw``, seed 002's hand-written network in raw ``tf.nn``
ops (:class:`RawBuilder`, inference only).

It imports nothing of dlbench but its Python 3.6 modules, only the standard library, numpy and tensorflow, and is
written for Python 3.6 (tests check that with vermin). The runner (:mod:`dlbench.backends.tensorflow_worker`) sends
the network description as JSON and drives this worker with the commands of worker_protocol.py::

    python3.6 tensorflow_worker.py CONFIG.json SOCKET
    python3.6 tensorflow_worker.py --describe

The network is the description's, NHWC as today's TensorFlow backend has it, built with ``tf.layers`` (Glorot-uniform
weights, zero biases) and the description's own padding (explicit, -inf for pooling); one training step is one
``session.run`` of the optimizer's update, its batch from a ``tf.data`` pipeline inside the graph (today's TensorFlow
backend's decoding of the TFRecord shards), so the step's wait for its input is not seen apart.
"""
import glob
import math
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside it, also where it is loaded by its path
from worker_protocol import Unavailable, dlbench_module, main, store_evaluation

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")  # TF 1's start-up chatter about CPU instructions
import tensorflow as tf

TENSORFLOW_GPU_CUDA = {"1.9": "9.0"}  # what each release's tensorflow-gpu wheels were built with
SHUFFLE_BUFFER = 10000  # today's TensorFlow backend's (dlbench.backends.tensorflow)


def describe():
    # tensorflow and tensorflow-gpu install the same package; only the distribution's name tells them apart
    site = os.path.dirname(os.path.dirname(tf.__file__))
    gpu = glob.glob(os.path.join(site, "tensorflow_gpu-*.dist-info"))
    return {"python": platform.python_version(), "framework_version": tf.__version__,
            "packages": {"tensorflow": tf.__version__, "numpy": np.__version__},
            "cuda_build": TENSORFLOW_GPU_CUDA[".".join(tf.__version__.split(".")[:2])] if gpu else None}


class Builder:
    """The description's nodes (dlbench.backends.worker.DescriptionPlanner) as a function of an NHWC tensor and
    whether it trains; each leaf's ops and weights under its name in the description (``conv1``), so that a second
    call (the evaluation's graph) reuses the first's variables and a trace's ops tell their layer."""

    def __call__(self, node):
        op = node["op"]
        if op == "sequential":
            children = [self(child) for child in node["children"]]

            def apply(x, training):
                for child in children:
                    x = child(x, training)
                return x
            return apply
        if op == "concat":
            branches = [self(branch) for branch in node["branches"]]
            return lambda x, training: tf.concat([branch(x, training) for branch in branches], axis=-1)
        if op == "residual":
            body = self(node["body"])
            shortcut = self(node["shortcut"]) if node["shortcut"] else None
            return lambda x, training: body(x, training) + (x if shortcut is None else shortcut(x, training))
        leaf = getattr(self, op)(node, node["name"])

        def scoped(x, training):
            with tf.name_scope(node["name"]):
                return leaf(x, training)
        return scoped

    @staticmethod
    def conv(node, name):
        pad = node["padding"]

        def apply(x, training):
            if pad:
                x = tf.pad(x, [[0, 0], [pad, pad], [pad, pad], [0, 0]])
            return tf.layers.conv2d(x, node["out_channels"], node["kernel"], node["stride"], "valid",
                                    use_bias=node["bias"], kernel_initializer=tf.glorot_uniform_initializer(),
                                    name=name, reuse=tf.AUTO_REUSE)
        return apply

    @staticmethod
    def batchnorm(node, name):
        # Keras's and the description's momentum 0.9 of the moving statistics (PyTorch's 0.1)
        return lambda x, training: tf.layers.batch_normalization(x, momentum=0.9, epsilon=node["eps"],
                                                                 training=training, name=name, reuse=tf.AUTO_REUSE)

    @staticmethod
    def relu(node, name):
        return lambda x, training: tf.nn.relu(x)

    @staticmethod
    def maxpool(node, name):
        padding = [[0, 0]] + [list(pads) for pads in node["pads"]] + [[0, 0]]

        def apply(x, training):
            if any(map(any, padding)):
                x = tf.pad(x, padding, constant_values=-math.inf)  # no max takes the padding
            return tf.layers.max_pooling2d(x, node["kernel"], node["stride"], "valid")
        return apply

    @staticmethod
    def globalavgpool(node, name):
        return lambda x, training: tf.reduce_mean(x, axis=[1, 2], keepdims=True)

    @staticmethod
    def flatten(node, name):
        return lambda x, training: tf.layers.flatten(x)

    @staticmethod
    def dense(node, name):
        return lambda x, training: tf.layers.dense(x, node["out_features"], use_bias=node["bias"],
                                                   kernel_initializer=tf.glorot_uniform_initializer(), name=name,
                                                   reuse=tf.AUTO_REUSE)

    @staticmethod
    def dropout(node, name):
        return lambda x, training: tf.layers.dropout(x, node["rate"], training=training)

    @staticmethod
    def lstm(node, name):
        def apply(x, training):
            # one bias per gate, as the description's; TF 1 adds a forget bias of 1 at run time where Keras starts
            # that gate's bias at 1
            cell = tf.nn.rnn_cell.LSTMCell(node["units"], initializer=tf.glorot_uniform_initializer(), name=name,
                                           reuse=tf.AUTO_REUSE)
            outputs, _ = tf.nn.dynamic_rnn(cell, x, dtype=tf.float32)
            return outputs[:, -1]
        return apply


class RawBuilder(Builder):
    """Seed 002's hand-written network in TF 1 (``tensorflow-nn-1.9``, inference only): raw ``tf.nn`` ops on weights
    of ``tf.get_variable`` in each layer's variable scope (Glorot-uniform, zero biases; batch norm's moving statistics
    not trainable), as today's ``tensorflow-nn`` (dlbench.backends.tensorflow_nn) builds it in TF 2."""

    @staticmethod
    def conv(node, name):
        kernel, stride, pad = node["kernel"], node["stride"], node["padding"]

        def apply(x, training):
            with tf.variable_scope(name):
                weights = tf.get_variable("kernel", [kernel, kernel, x.shape[-1].value, node["out_channels"]],
                                          initializer=tf.glorot_uniform_initializer())
                if pad:
                    x = tf.pad(x, [[0, 0], [pad, pad], [pad, pad], [0, 0]])
                y = tf.nn.conv2d(x, weights, [1, stride, stride, 1], "VALID")
                return tf.nn.bias_add(y, tf.get_variable("bias", [node["out_channels"]],
                                                         initializer=tf.zeros_initializer())) if node["bias"] else y
        return apply

    @staticmethod
    def batchnorm(node, name):
        def apply(x, training):  # inference: the moving statistics
            with tf.variable_scope(name):
                channels = [x.shape[-1].value]
                gamma, beta, mean, variance = (
                    tf.get_variable(variable, channels, initializer=initializer, trainable=trains)
                    for variable, initializer, trains in (("gamma", tf.ones_initializer(), True),
                                                          ("beta", tf.zeros_initializer(), True),
                                                          ("moving_mean", tf.zeros_initializer(), False),
                                                          ("moving_variance", tf.ones_initializer(), False)))
                return tf.nn.batch_normalization(x, mean, variance, beta, gamma, node["eps"])
        return apply

    @staticmethod
    def maxpool(node, name):
        padding = [[0, 0]] + [list(pads) for pads in node["pads"]] + [[0, 0]]
        window, stride = [1, node["kernel"], node["kernel"], 1], [1, node["stride"], node["stride"], 1]

        def apply(x, training):
            if any(map(any, padding)):
                x = tf.pad(x, padding, constant_values=-math.inf)  # no max takes the padding
            return tf.nn.max_pool(x, window, stride, "VALID")
        return apply

    @staticmethod
    def flatten(node, name):
        return lambda x, training: tf.reshape(x, [-1, int(np.prod(x.shape.as_list()[1:]))])

    @staticmethod
    def dense(node, name):
        def apply(x, training):
            with tf.variable_scope(name):
                weights = tf.get_variable("kernel", [x.shape[-1].value, node["out_features"]],
                                          initializer=tf.glorot_uniform_initializer())
                y = tf.matmul(x, weights)
                return tf.nn.bias_add(y, tf.get_variable("bias", [node["out_features"]],
                                                         initializer=tf.zeros_initializer())) if node["bias"] else y
        return apply

    @staticmethod
    def dropout(node, name):
        return lambda x, training: x  # inference

    @staticmethod
    def lstm(node, name):
        raise Unavailable("tf.nn has no LSTM op: the raw-op builder builds convolutional and dense networks")


def network(plan, builder=Builder):
    """The description as a function of (NHWC images, training) returning the logits."""
    body = builder()(plan)

    def logits(images, training):
        with tf.variable_scope("net", reuse=tf.AUTO_REUSE):
            return tf.layers.flatten(body(images, training))
    return logits


def traced_ops(metadata):
    """Each op of one traced step, its name and seconds (RunMetadata's step stats: its start to end on the device that
    ran it; on a GPU its streams' kernels)."""
    devices = [stats for stats in metadata.step_stats.dev_stats if "stream:all" in stats.device] or [
        stats for stats in metadata.step_stats.dev_stats if "stream" not in stats.device
        and "memcpy" not in stats.device]
    for stats in devices:
        for node in stats.node_stats:
            yield node.node_name, (node.op_end_rel_micros - node.op_start_rel_micros) / 1e6


def layer_seconds(metadata):
    """One traced step's seconds per layer (:func:`traced_ops`), by the op's name: ``net/<layer>/`` its forward,
    ``gradients/net/<layer>/`` its backward, ``<optimizer>/update_net/<layer>/`` its weights' update."""
    found = {"forward": {}, "backward": {}, "update": {}}
    for name, seconds in traced_ops(metadata):
        parts = name.split("/")
        if parts[0] == "net" and len(parts) > 2:
            phase, layer = "forward", parts[1]
        elif parts[:2] == ["gradients", "net"] and len(parts) > 3:
            phase, layer = "backward", parts[2]
        elif len(parts) > 2 and parts[1] == "update_net":
            phase, layer = "update", parts[2]
        else:
            continue
        found[phase][layer] = found[phase].get(layer, 0.0) + seconds
    return found


def trainable_parameters():
    return int(sum(np.prod(variable.shape.as_list()) for variable in tf.trainable_variables()))


def optimizer(rule, learning_rate):
    """The network's optimizer (dlbench.networks.Optimizer, as a dict): TF 1's, whose RMSProp keeps epsilon inside
    the square root and starts its mean square at 1."""
    if rule["kind"] == "rmsprop":
        return tf.train.RMSPropOptimizer(learning_rate, decay=rule["rho"], momentum=0.0, epsilon=rule["epsilon"])
    return tf.train.MomentumOptimizer(learning_rate, rule["momentum"])


def decoder(config, augment):
    """A TFRecord's normalised float32 image (NHWC) and int64 label, as today's TensorFlow backend decodes it
    (dlbench.backends.tfrecord_images)."""
    images = dlbench_module("backends/tfrecord_images")
    ops = images.Ops(parse=tf.parse_single_example, feature=tf.FixedLenFeature, decode=decode_image,
                     crop=tf.random_crop, centre=tf.image.resize_image_with_crop_or_pad, resize=tf.image.resize_images)
    mean, std = (np.float32(values) for values in (config["mean"], config["std"]))
    return images.decoder(tf, ops, config["input_shape_nhwc"], config["stored_channels"], config["input_size"], mean,
                          std, augment)


def decode_image(encoded, channels):
    """TF 1.9's decode_image, whose result has no rank until it is told."""
    image = tf.image.decode_image(encoded, channels=channels)
    image.set_shape([None, None, channels])
    return image


def training_batches(config):
    """Endless batches from the TFRecord files: files shuffled, records interleaved, shuffled and decoded in the
    run's threads, whole batches."""
    files = tf.data.Dataset.from_tensor_slices(config["files"]).shuffle(len(config["files"]), seed=config["seed"])
    records = files.interleave(tf.data.TFRecordDataset, cycle_length=min(len(config["files"]), config["threads"]))
    pipeline = (records.shuffle(SHUFFLE_BUFFER, seed=config["seed"]).repeat()
                .map(decoder(config, augment=True), num_parallel_calls=config["threads"])
                .apply(tf.contrib.data.batch_and_drop_remainder(config["batch_size"])).prefetch(1))
    return pipeline.make_one_shot_iterator().get_next()


class Worker:
    def __init__(self, config, rank):
        self.config = config
        tf.set_random_seed(config["seed"])
        self.logits = network(config["plan"], RawBuilder if config["raw"] else Builder)
        if config["synthetic_images"]:  # resident: a variable the steps read, never fed
            images = np.load(config["synthetic_images"])
            if images.ndim == 4:  # images NCHW -> NHWC; sequences as they are
                images = images.transpose(0, 2, 3, 1)
            images = tf.Variable(images, trainable=False, name="synthetic_images")
            labels = tf.Variable(np.load(config["synthetic_labels"]), trainable=False, name="synthetic_labels")
        else:
            images, labels = training_batches(config)
        self.images = images
        if config["raw"]:  # inference alone: its weights are built by the first forward pass's graph
            self.logits(images, training=False)
        else:
            self.loss_tensor = tf.losses.sparse_softmax_cross_entropy(labels, self.logits(images, training=True))
            with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):  # batch norm's statistics
                self.train = optimizer(config["optimizer"], config["learning_rate"]).minimize(self.loss_tensor)
        self.parameters = trainable_parameters()
        threads = config["threads"]
        self.session = tf.Session(config=tf.ConfigProto(
            intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads,
            device_count={"GPU": config["gpus"]}, allow_soft_placement=False))
        if config["gpus"] and not tf.test.is_gpu_available():
            raise Unavailable(f"TensorFlow {tf.__version__} sees no GPU (tf.test.is_gpu_available())")
        self.session.run(tf.global_variables_initializer())
        self.input_wait, self.loss, self.test = None, None, None  # the batch is taken inside the step's graph
        self.trace, self.traced = None, []

    def step(self):
        # session.run returns when the update has run: the step has finished
        if self.trace is None:
            self.loss = float(self.session.run([self.train, self.loss_tensor])[1])
            return
        metadata = tf.RunMetadata()
        self.loss = float(self.session.run([self.train, self.loss_tensor], options=self.trace,
                                           run_metadata=metadata)[1])
        self.traced.append(layer_seconds(metadata))

    def start_profiler(self, directory):
        """TF 1's tracer, as seed 004 used it: each step run with a full trace into its RunMetadata."""
        self.trace, self.traced = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), []

    def stop_profiler(self):
        """Each traced step's seconds per layer and phase (:func:`layer_seconds`)."""
        self.trace = None
        return {"steps": self.traced}

    def prepare_inference(self, batch_size):
        """A resident batch of the run's input for forward passes: the first ``batch_size`` images of its next."""
        images = self.session.run(self.images)[:batch_size]
        resident = tf.Variable(images, trainable=False, name="inference_images")
        self.session.run(resident.initializer)
        self.forward_output = self.logits(resident, training=False)

    def forward(self):
        self.session.run(self.forward_output)  # dropout off, batch norm's moving statistics

    def evaluate(self, directory):
        """The network's logits and the labels of every test image, one pass in stored order in batches of the
        case's size, stored in ``directory`` as .npy files."""
        if self.test is None:
            batches = (tf.data.TFRecordDataset(self.config["test_files"])
                       .map(decoder(self.config, augment=False), num_parallel_calls=self.config["threads"])
                       .batch(self.config["batch_size"]).make_initializable_iterator())
            images, labels = batches.get_next()
            self.test = (batches.initializer, (self.logits(images, training=False), labels))
        self.session.run(self.test[0])
        logits, all_labels = [], []
        while True:
            try:
                batch_logits, batch_labels = self.session.run(self.test[1])
            except tf.errors.OutOfRangeError:  # the one pass is over
                break
            logits.append(batch_logits.astype(np.float32))
            all_labels.append(batch_labels.astype(np.int64))
        return store_evaluation(directory, logits, all_labels, self.config["num_classes"])

    def weights_sum(self):
        return float(sum(np.sum(value, dtype=np.float64) for value in self.session.run(tf.trainable_variables())))

    def finish(self):
        self.session.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], describe, Worker))
