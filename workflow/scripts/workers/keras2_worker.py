"""The Keras side of a run of Keras 2 as seed 001 ran it, under CPython 3.6: Keras 2.2.4 on the thesis's TensorFlow
(1.9.0), or keras-mxnet 2.2.4.3 (AWS's Keras 2 with an MXNet backend; it installs as the ``keras`` package) on the
thesis's MXNet (1.2.0). The environment's own Keras chooses the backend.

It imports nothing of dlbench but its Python 3.6 modules and its backend's worker (for that backend's reader of its
format), only the standard library, numpy, keras and the backend's framework, and is written for Python 3.6 (tests
check that with vermin). The runner (:mod:`dlbench.backends.keras2_worker`) sends the network description as JSON and
drives this worker with the commands of worker_protocol.py::

    python3.6 keras2_worker.py CONFIG.json SOCKET
    python3.6 keras2_worker.py --describe

The network is the description's in Keras 2's functional API, channels last (Keras's default on both backends, so the
same Keras code runs on each, as seed 001's did): explicit zero padding before each padded convolution, and each leaf
named as in the description. A step is ``train_on_batch`` on a batch its backend's reader decoded (TFRecord through
TF 1.9's tf.data, RecordIO through MXNet 1.2's ImageRecordIter, as the backend's own worker reads it) into NumPy
arrays; ``fit N`` is seed 001's ``model.fit`` over NumPy arrays, each step's end stamped by Keras's callback.
"""
import glob
import math
import os
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # beside it, also where it is loaded by its path
from worker_protocol import InputClock, Unavailable, main, store_evaluation

# Keras 2 reads its backend and image layout from, and writes its defaults to, $KERAS_HOME/keras.json (else
# ~/.keras, which Keras 3 and a user share): a fresh one, its defaults, removed at exit.
KERAS_HOME = tempfile.TemporaryDirectory(prefix="dlbench-keras2-")
os.environ["KERAS_HOME"] = KERAS_HOME.name
SITE = os.path.dirname(os.path.dirname(np.__file__))
BACKEND = "mxnet" if glob.glob(os.path.join(SITE, "keras_mxnet-*.dist-info")) else "tensorflow"
os.environ["KERAS_BACKEND"] = BACKEND
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import keras
from keras import backend as K
from keras import layers

if BACKEND == "mxnet":
    import mxnet_worker as backend_worker
else:
    import tensorflow_worker as backend_worker

K.set_image_data_format("channels_last")
K.set_floatx("float32")
# keras-mxnet's RNNs unroll on MXNet before 1.3.1 (its foreach operator came then); the same LSTM equations
UNROLL = BACKEND == "mxnet" and tuple(map(int, backend_worker.mx.__version__.split(".")[:3])) < (1, 3, 1)


def describe():
    described = backend_worker.describe()
    distribution = "keras-mxnet" if BACKEND == "mxnet" else "keras"
    return {**described, "framework_version": keras.__version__,
            "packages": {**described["packages"], distribution: keras.__version__}}


def maxpool_padding(node):
    """Keras's name for the description's pooling padding: "valid", or "same" where it gives the description's output
    size (as dlbench.backends.keras_layers decides for Keras 3)."""
    if not any(map(any, node["pads"])):
        return "valid"
    sizes = node["in_shape"][1:]
    described = [(size + before + after - node["kernel"]) // node["stride"] + 1
                 for size, (before, after) in zip(sizes, node["pads"])]
    if described == [math.ceil(size / node["stride"]) for size in sizes]:
        return "same"
    raise Unavailable(f"max-pooling {node['name']} (padding {node['pads']}) has no Keras 2 padding mode")


class Builder:
    """The description's nodes (dlbench.backends.worker.DescriptionPlanner) as functions of a Keras tensor, channels
    last; each leaf a Keras layer named as the description names it."""

    def __call__(self, node):
        op = node["op"]
        if op == "sequential":
            children = [self(child) for child in node["children"]]

            def apply(x):
                for child in children:
                    x = child(x)
                return x
            return apply
        if op == "concat":
            branches = [self(branch) for branch in node["branches"]]
            return lambda x: layers.Concatenate()([branch(x) for branch in branches])
        if op == "residual":
            body = self(node["body"])
            shortcut = self(node["shortcut"]) if node["shortcut"] else None
            return lambda x: layers.Add()([body(x), x if shortcut is None else shortcut(x)])
        return getattr(self, op)(node, node["name"])

    @staticmethod
    def conv(node, name):
        conv = layers.Conv2D(node["out_channels"], node["kernel"], strides=node["stride"], padding="valid",
                             use_bias=node["bias"], name=name)
        if not node["padding"]:
            return conv
        pad = layers.ZeroPadding2D(node["padding"], name=name + "_padding")
        return lambda x: conv(pad(x))

    @staticmethod
    def batchnorm(node, name):
        return layers.BatchNormalization(momentum=0.9, epsilon=node["eps"], name=name)  # PyTorch's momentum 0.1

    @staticmethod
    def relu(node, name):
        return layers.Activation("relu", name=name)

    @staticmethod
    def maxpool(node, name):
        return layers.MaxPooling2D(node["kernel"], node["stride"], padding=maxpool_padding(node), name=name)

    @staticmethod
    def globalavgpool(node, name):
        pool = layers.GlobalAveragePooling2D(name=name)
        keep = layers.Reshape((1, 1, -1), name=name + "_keepdims")  # Keras 2's pooling has no keepdims
        return lambda x: keep(pool(x))

    @staticmethod
    def flatten(node, name):
        return layers.Flatten(name=name)

    @staticmethod
    def dense(node, name):
        return layers.Dense(node["out_features"], use_bias=node["bias"], name=name)

    @staticmethod
    def dropout(node, name):
        return layers.Dropout(node["rate"], name=name)

    @staticmethod
    def lstm(node, name):
        return layers.LSTM(node["units"], unroll=UNROLL, name=name)


def channels_last(shape):
    """An input shape of the description (NCHW images, or (steps, features) sequences) as Keras takes it."""
    return tuple(shape[1:]) + (shape[0],) if len(shape) == 3 else tuple(shape)


def build(plan, input_shape):
    """The description as a Keras model of its logits."""
    images = layers.Input(channels_last(input_shape))
    logits = Builder()(plan)(images)
    if len(K.int_shape(logits)) > 2:
        logits = layers.Flatten()(logits)
    return keras.models.Model(images, logits)


def leaf_names(plan):
    """The names of the description's layers (the plan's leaves)."""
    if plan["op"] in ("sequential", "concat"):
        return [name for child in plan["children" if plan["op"] == "sequential" else "branches"]
                for name in leaf_names(child)]
    if plan["op"] == "residual":
        return leaf_names(plan["body"]) + (leaf_names(plan["shortcut"]) if plan["shortcut"] else [])
    return [plan["name"]]


def layer_seconds(metadata, layers):
    """One traced step's seconds (the TF 1.9 worker's reading of a RunMetadata), by Keras 2's name scopes:
    ``<layer>/`` forward (with its ``<layer>_padding/`` and ``<layer>_keepdims/``, which :class:`Builder` adds),
    ``training/<optimizer>/gradients/<layer>/`` backward, and the optimizer's other ops under
    ``training/<optimizer>/`` the update of every weight at once (Keras 2 names no layer in them)."""
    found = {"forward": {}, "backward": {}, "update": 0.0}
    for name, seconds in backend_worker.traced_ops(metadata):
        parts = name.split("/")
        if parts[0] == "training" and len(parts) > 3 and parts[2] == "gradients":
            phase, layer = "backward", parts[3]
        elif parts[0] == "training":
            found["update"] += seconds
            continue
        else:
            phase, layer = "forward", parts[0]
        for suffix in ("_padding", "_keepdims"):
            layer = layer[:-len(suffix)] if layer.endswith(suffix) else layer  # noqa: FURB188 - 3.6 has no removesuffix
        if layer in layers:  # not the loss's, the input's or the variables' own ops
            found[phase][layer] = found[phase].get(layer, 0.0) + seconds
    return found


def trainable_parameters(model):
    return int(sum(K.count_params(weight) for weight in model.trainable_weights))


def optimizer(rule, learning_rate):
    """The network's optimizer (dlbench.networks.Optimizer, as a dict): Keras 2's (keras-mxnet's are MXNet's own)."""
    if rule["kind"] == "rmsprop":
        return keras.optimizers.RMSprop(learning_rate, rho=rule["rho"], epsilon=rule["epsilon"])
    return keras.optimizers.SGD(learning_rate, momentum=rule["momentum"])


def logits_loss(labels, logits):
    return K.sparse_categorical_crossentropy(labels, logits, from_logits=True)


def nhwc(images):
    return images.transpose(0, 2, 3, 1) if images.ndim == 4 else images


class TensorFlowReader:
    """NumPy batches of the TFRecord shards, from TF 1.9's tf.data pipeline of its worker, run in Keras's session."""

    def __init__(self, config):
        self.config, self.session = config, K.get_session()
        self.next_tensors = backend_worker.training_batches(config)

    def next(self):
        return tuple(self.session.run(self.next_tensors))

    def in_order(self, files):
        """Every image of ``files`` once, in stored order, centre-cropped, in batches of the case's size."""
        tf = backend_worker.tf
        batches = (tf.data.TFRecordDataset(files)
                   .map(backend_worker.decoder(self.config, augment=False), num_parallel_calls=self.config["threads"])
                   .batch(self.config["batch_size"]).make_one_shot_iterator().get_next())
        while True:
            try:
                yield self.session.run(batches)
            except tf.errors.OutOfRangeError:  # the one pass is over
                return


class MXNetReader:
    """NumPy batches of the RecordIO shards, from MXNet 1.2's ImageRecordIter as its worker reads them."""

    def __init__(self, config):
        self.config = config
        record_shards = backend_worker.dlbench_module("backends/record_shards")
        self.test_batches = record_shards.test_batches
        self.batches = record_shards.ShardBatches(config["shards"], lambda shard: backend_worker.image_records(
            shard, config["record_options"]), config["seed"])

    def next(self):
        images, labels = self.batches.next()
        return nhwc(images.asnumpy()), labels.asnumpy()

    def in_order(self, shards):
        """Every image of ``shards`` once, in stored order, centre-cropped, in batches of the case's size."""
        iterators = (backend_worker.image_records(shard, self.config["test_options"]) for shard in shards)
        for images, labels in self.test_batches(iterators):
            yield nhwc(images.asnumpy()), labels.asnumpy()


def placement(gpus):
    """model.compile's options that place the model on ``gpus`` (0: the CPU; 1: the first GPU): keras-mxnet, given no
    context, takes the first GPU nvidia-smi lists (mx.test_utils.list_gpus) whatever the run's device; TensorFlow's
    session places it."""
    return {"context": gpus} if BACKEND == "mxnet" else {}


class Worker:
    def __init__(self, config, rank):
        self.config = config
        if config["gpus"] > 1:
            raise Unavailable("Keras 2's multi-GPU model (keras.utils.multi_gpu_model) is not built; the native "
                              "backends run on N GPUs")
        np.random.seed(config["seed"])
        if BACKEND == "mxnet":
            backend_worker.mx.random.seed(config["seed"])
            backend_worker.contexts(config["gpus"])  # the GPU tried: refused by name
        else:
            tf = backend_worker.tf
            tf.set_random_seed(config["seed"])
            threads = config["threads"]
            K.set_session(tf.Session(config=tf.ConfigProto(
                intra_op_parallelism_threads=threads, inter_op_parallelism_threads=threads,
                device_count={"GPU": config["gpus"]})))
            if config["gpus"] and not tf.test.is_gpu_available():
                raise Unavailable(f"TensorFlow {tf.__version__} sees no GPU (tf.test.is_gpu_available())")
        self.model = build(config["plan"], config["input_shape"])
        self.model.compile(optimizer(config["optimizer"], config["learning_rate"]), loss=logits_loss,
                           **placement(config["gpus"]))
        self.parameters = trainable_parameters(self.model)
        if config["synthetic_images"]:
            resident = (nhwc(np.load(config["synthetic_images"])), np.load(config["synthetic_labels"]))
            self.reader = None
            self.next_batch = InputClock(lambda: resident)
        else:
            self.reader = (MXNetReader if BACKEND == "mxnet" else TensorFlowReader)(config)
            self.next_batch = InputClock(self.reader.next)
        self.fit_arrays = self.arrays(config["iterations"]) if config["keras_fit"] else None
        self.loss, self.metadata, self.traced = None, None, []
        self.layer_names = set(leaf_names(config["plan"]))

    @property
    def input_wait(self):
        return self.next_batch.seconds

    def step(self):
        images, labels = self.next_batch()
        # train_on_batch returns the loss as a NumPy number: the step has finished
        self.loss = float(self.model.train_on_batch(images, labels.reshape(-1, 1)))
        if self.metadata is not None:
            self.traced.append(layer_seconds(self.metadata, self.layer_names))
            self.metadata.Clear()  # TF merges each run's metadata into it

    def start_profiler(self, directory):
        """TF 1's tracer under Keras 2 on TensorFlow (the registry keeps keras-mxnet's profile runs from it): Keras's
        train function run with a full trace into a RunMetadata, as the TF 1.9 worker traces its steps; Keras 2.2.4
        passes them to TF 1.9's session.run (its legacy call, which TF before 1.10 needs for run_metadata)."""
        tf = backend_worker.tf
        self.model._make_train_function()  # Keras's own, built at the first step; made here if none has run
        self.metadata, self.traced = tf.RunMetadata(), []
        function = self.model.train_function
        function.session_kwargs = {"options": tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                                   "run_metadata": self.metadata}
        function.run_metadata = self.metadata

    def stop_profiler(self):
        """Each traced step's seconds per layer and phase (:func:`layer_seconds`)."""
        function = self.model.train_function
        function.session_kwargs, function.run_metadata, self.metadata = {}, None, None
        return {"steps": self.traced}

    def arrays(self, steps):
        """Seed 001's arrays for model.fit, at most the config's ``fit_arrays_bytes``: synthetic data's resident batch
        repeated (as many as the steps), or every stored training image, centre-cropped."""
        if self.reader is None:
            images, labels = self.next_batch()
            copies = max(1, min(steps, self.config["fit_arrays_bytes"] // images.nbytes))
            return np.concatenate([images] * copies), np.concatenate([labels] * copies)
        batches = list(self.reader.in_order(self.config["files" if BACKEND == "tensorflow" else "shards"]))
        held = sum(images.nbytes for images, _ in batches)
        if held > self.config["fit_arrays_bytes"]:
            raise Unavailable(f"keras_fit holds the training split in memory as NumPy arrays: {held / 2**30:.1f} GiB "
                              f"are more than {self.config['fit_arrays_bytes'] / 2**30:.0f} GiB")
        return np.concatenate([images for images, _ in batches]), np.concatenate([labels for _, labels in batches])

    def fit(self, steps, step_ended):
        """``steps`` steps of model.fit over the arrays (shuffled, Keras's default), as many epochs as they need,
        stopped after the last; ``step_ended()`` at each step's end (Keras's per-batch callback, after the step's
        loss has come back to the host)."""
        images, labels = self.fit_arrays
        batch = self.config["batch_size"]
        if len(images) < batch:
            raise ValueError(f"model.fit's arrays hold {len(images)} images, fewer than a batch of {batch}")
        usable = len(images) // batch * batch  # whole batches, as every other loop of the run
        done = []

        def batch_ended(index, logs):
            self.loss = float(logs["loss"])
            done.append(index)
            step_ended()
            if len(done) == steps:
                self.model.stop_training = True
        self.model.fit(images[:usable], labels[:usable].reshape(-1, 1), batch_size=batch,
                       epochs=-(-steps // (usable // batch)), verbose=0,
                       callbacks=[keras.callbacks.LambdaCallback(on_batch_end=batch_ended)])
        if len(done) != steps:
            raise RuntimeError(f"model.fit ran {len(done)} steps of {steps}")

    def prepare_inference(self, batch_size):
        """A resident batch of the run's input for forward passes: the first ``batch_size`` images of its next."""
        self.inference_input = self.next_batch()[0][:batch_size]

    def forward(self):
        self.model.predict_on_batch(self.inference_input)  # NumPy predictions: the pass has finished

    def evaluate(self, directory):
        """The network's logits and the labels of every test image, one pass in stored order, stored in ``directory``
        as .npy files."""
        logits, labels = [], []
        for images, batch_labels in self.reader.in_order(self.config["test_files" if BACKEND == "tensorflow"
                                                                     else "test_shards"]):
            logits.append(np.asarray(self.model.predict_on_batch(images), np.float32))
            labels.append(batch_labels.astype(np.int64))
        return store_evaluation(directory, logits, labels, self.config["num_classes"])

    def weights_sum(self):
        return float(sum(np.sum(value, dtype=np.float64) for value in self.model.get_weights()))

    def finish(self):
        K.clear_session()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], describe, Worker))
