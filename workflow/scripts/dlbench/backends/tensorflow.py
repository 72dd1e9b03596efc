"""TensorFlow backend: Keras 3 layers, a compiled (``tf.function``) training step under a
``tf.distribute`` strategy, and ``tf.data`` reading the TFRecord shards.

Images are NHWC, TensorFlow's native layout on CPU and GPU. GPU memory growth is enabled before
TensorFlow touches a GPU: without it TensorFlow reserves nearly all memory and the monitor's
GPU-memory figure says nothing about the network. Mixed precision is Keras's dtype policy (fp16
with a ``LossScaleOptimizer``); compiling is XLA on the replica step (``jit_compile``), the input
iterator staying outside it.
"""
from __future__ import annotations

import keras
import tensorflow as tf

from .. import networks
from ..formats import TFRECORD_FILE
from ..spec import RunSpec
from . import InputClock, already_finished, inputs, require_gpus
from .keras_layers import build, forward_shape, set_precision, trainable_parameters  # noqa: F401 - the backend interface

SHUFFLE_BUFFER = 10_000  # records, as the model garden's ImageNet input


def framework_version() -> str:
    return tf.__version__


def gpu_allocator_peak_mib(gpus: list[str]) -> float:
    """TensorFlow's own peak over the run, summed over ``gpus`` ("/gpu:0", ...). Also for Keras on TensorFlow."""
    return sum(tf.config.experimental.get_memory_info(gpu.lstrip("/").upper())["peak"] for gpu in gpus) / 2**20


def cuda_build() -> str | None:
    info = tf.sysconfig.get_build_info()
    return info.get("cuda_version") if info.get("is_cuda_build") else None


PACKAGES = ("tensorflow", "tensorflow-cpu", "keras", "numpy")  # their versions go into the run's record


def dataset(spec: RunSpec, description: networks.Network) -> tf.data.Dataset:
    """Endless global batches of normalised NHWC float32 images and int64 labels."""
    channels, height, width = description.input_shape
    mean, std = inputs.pixel_statistics(spec)
    if spec.data_mode == "synthetic":
        images, labels = inputs.normalised_synthetic_batch(spec, description)
        return tf.data.Dataset.from_tensors((images.transpose(0, 2, 3, 1), labels)).repeat()
    files = [str(shard / TFRECORD_FILE) for shard in inputs.train_shards(spec)]
    features = {"image/encoded": tf.io.FixedLenFeature([], tf.string),
                "image/class/label": tf.io.FixedLenFeature([], tf.int64)}

    def decode(record):
        example = tf.io.parse_single_example(record, features)
        image = tf.io.decode_image(example["image/encoded"], channels=channels, expand_animations=False)
        image = tf.image.random_crop(image, (height, width, channels))  # ILSVRC12: 256 -> 224
        if channels == 3:
            image = tf.image.random_flip_left_right(image)
        return (tf.cast(image, tf.float32) - mean) / std, example["image/class/label"]

    records = (tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=spec.seed)
               .interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), spec.threads),
                           num_parallel_calls=tf.data.AUTOTUNE))
    pipeline = (records.shuffle(SHUFFLE_BUFFER, seed=spec.seed).repeat()
                .map(decode, num_parallel_calls=spec.threads)
                .batch(spec.batch_size_global, drop_remainder=True)
                .prefetch(tf.data.AUTOTUNE))
    options = tf.data.Options()
    options.threading.private_threadpool_size = spec.threads  # the job's cores, no more
    return pipeline.with_options(options)


def configure_runtime(threads: int, precision: str = "fp32") -> int:
    """Threads, TF32 and GPU memory growth, all only settable before TensorFlow initialises (also
    for Keras on TensorFlow); returns the number of visible GPUs."""
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf.config.threading.set_inter_op_parallelism_threads(threads)
    tf.config.experimental.enable_tensor_float_32_execution(precision == "tf32")  # TensorFlow's default: on
    gpus = tf.config.list_physical_devices("GPU")
    for gpu in gpus:
        tf.config.experimental.set_memory_growth(gpu, True)
    return len(gpus)


def _devices(spec: RunSpec) -> list[str]:
    visible = configure_runtime(spec.threads, spec.precision)
    if spec.gpus == 0:
        return ["/cpu:0"]
    require_gpus(spec, spec.gpus, visible, f"TensorFlow {tf.__version__}")
    return [f"/gpu:{index}" for index in range(spec.gpus)]


class Trainer:
    """``devices`` overrides the spec's (tests: logical CPU devices for the multi-device path)."""

    def __init__(self, spec: RunSpec, description: networks.Network, devices: list[str] | None = None):
        devices = devices or _devices(spec)
        self.gpus = [device for device in devices if "gpu" in device.lower()]
        # Data parallelism: the global batch is split over the replicas, gradients summed. One device
        # takes the default strategy, which adds nothing to the step (OneDeviceStrategy cost LeNet
        # about a tenth of its step time on CPU).
        self.strategy = strategy = (tf.distribute.MirroredStrategy(devices) if len(devices) > 1
                                    else tf.distribute.get_strategy())
        keras.utils.set_random_seed(spec.seed)
        set_precision(spec.precision)
        with strategy.scope(), tf.device(devices[0]):
            self.model = build(description)
            optimizer = keras.optimizers.SGD(spec.learning_rate, momentum=0.9)
            if spec.precision == "fp16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            # Momentum slots now, in the strategy's scope: created inside the traced step on a
            # replica, they fail under MirroredStrategy (uninitialised placeholder in a cond).
            optimizer.build(self.model.trainable_variables)
        cross_entropy = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
        model, batch = self.model, spec.batch_size_global

        def replica_step(images, labels):
            with tf.GradientTape() as tape:
                loss = tf.nn.compute_average_loss(cross_entropy(labels, model(images, training=True)),
                                                  global_batch_size=batch)
                scaled = optimizer.scale_loss(loss)  # the loss itself unless fp16's LossScaleOptimizer
            gradients = tape.gradient(scaled, model.trainable_variables)
            optimizer.apply_gradients(zip(gradients, model.trainable_variables))  # unscaled there
            return loss

        if spec.compile:
            replica_step = tf.function(replica_step, jit_compile=True)

        iterator = iter(strategy.experimental_distribute_dataset(dataset(spec, description)))
        if spec.data_mode == "synthetic":  # one batch, resident on the devices, as in the other frameworks
            resident = next(iterator)
            self.next_batch = InputClock(lambda: resident)
        else:
            self.next_batch = InputClock(lambda: next(iterator))

        # The batch is taken out of the traced step, where the loop can time its wait; a fixed
        # signature spares matching the arguments on every call.
        @tf.function(input_signature=iterator.element_spec)
        def train_step(images, labels):
            return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step, (images, labels)), axis=None)

        self.train_step = train_step
        self.loss = None

    def step(self):
        self.loss = self.train_step(*self.next_batch())
        # On CPU the call returns when the step's ops have run; GPU kernels run on after it returns.
        return self.loss.numpy if self.gpus else already_finished

    def synchronize(self) -> None:
        if self.loss is not None:
            self.loss.numpy()

    def final_loss(self) -> float | None:
        return None if self.loss is None else float(self.loss)

    def allocator_peak_mib(self) -> float | None:
        return gpu_allocator_peak_mib(self.gpus) if self.gpus else None

    def input_wait_seconds(self) -> float:
        return self.next_batch.seconds
