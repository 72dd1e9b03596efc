"""TensorFlow backend: Keras 3 layers, a compiled (``tf.function``) training step under a
``tf.distribute`` strategy, and ``tf.data`` reading the TFRecord shards.

Images are NHWC, TensorFlow's native layout on CPU and GPU. GPU memory growth is enabled before
TensorFlow touches a GPU: without it TensorFlow reserves nearly all memory and the monitor's
GPU-memory figure says nothing about the network. Mixed precision is Keras's dtype policy (fp16
with a ``LossScaleOptimizer``); compiling is XLA on the replica step (``jit_compile``), the input
iterator staying outside it.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Self

import keras
import numpy as np
import tensorflow as tf

from .. import networks
from ..formats import TFRECORD_FILE
from ..hardware import cluster
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import GpuCode, InputClock, inputs, require_gpus, tfrecord_images, updates_found, xspace
from .keras_layers import build, forward_shape, keras_layout, keras_optimizer, set_precision, trainable_parameters  # noqa: F401 - the backend interface

SHUFFLE_BUFFER = 10_000  # records, as the model garden's ImageNet input


def framework_version() -> str:
    return tf.__version__


def gpu_allocator_peak_mib(gpus: list[str]) -> float:
    """TensorFlow's own peak over the run, summed over ``gpus`` ("/gpu:0", ...). Also for Keras on TensorFlow."""
    return sum(tf.config.experimental.get_memory_info(gpu.lstrip("/").upper())["peak"] for gpu in gpus) / 2**20


def cuda_build() -> str | None:
    info = tf.sysconfig.get_build_info()
    return info.get("cuda_version") if info.get("is_cuda_build") else None


def gpu_code() -> GpuCode:
    """The architectures TensorFlow was compiled for (its build info) and the GPUs it sees. Also for Keras on it."""
    info, gpus = tf.sysconfig.get_build_info(), []
    for gpu in tf.config.list_physical_devices("GPU"):
        details = tf.config.experimental.get_device_details(gpu)
        major, minor = details.get("compute_capability", (0, 0))
        gpus.append((details.get("device_name", gpu.name), 10 * major + minor))
    # Its build's compute_90 is sm_90's kernels and PTX (TensorFlow's CUDA toolchain), its sm_89 kernels alone
    return GpuCode.from_arch_names(f"TensorFlow {tf.__version__}", info.get("cuda_version"),
                                   info.get("cuda_compute_capabilities", []), gpus, ptx_with_kernels=True)


PACKAGES = ("tensorflow", "tensorflow-cpu", "keras", "numpy")  # their versions go into the run's record


TF2_OPS = tfrecord_images.Ops(
    parse=tf.io.parse_single_example, feature=tf.io.FixedLenFeature,
    decode=lambda encoded, channels: tf.io.decode_image(encoded, channels=channels, expand_animations=False),
    crop=tf.image.random_crop, centre=tf.image.resize_with_crop_or_pad, resize=tf.image.resize)


def _decoder(spec: RunSpec, description: networks.Network, augment: bool):
    """A TFRecord's normalised float32 image (NHWC) and int64 label (:func:`tfrecord_images.decoder`)."""
    channels, height, width = description.input_shape
    mean, std = inputs.pixel_statistics(spec)
    return tfrecord_images.decoder(tf, TF2_OPS, (height, width, channels), inputs.stored_shape(spec, description)[0],
                                   spec.input_size, mean, std, augment)


def _with_threads(pipeline: tf.data.Dataset, threads: int) -> tf.data.Dataset:
    options = tf.data.Options()
    options.threading.private_threadpool_size = threads  # the job's cores, no more
    return pipeline.with_options(options)


def dataset(spec: RunSpec, description: networks.Network) -> tf.data.Dataset:
    """Endless global batches of normalised float32 inputs (images NHWC) and int64 labels."""
    if spec.data_mode == "synthetic":
        images, labels = inputs.normalised_synthetic_batch(spec, description)
        return tf.data.Dataset.from_tensors((keras_layout(images), labels)).repeat()
    files = [str(shard / TFRECORD_FILE) for shard in inputs.train_shards(spec)]
    records = (tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=spec.seed)
               .interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), spec.threads),
                           num_parallel_calls=tf.data.AUTOTUNE))
    pipeline = (records.shuffle(SHUFFLE_BUFFER, seed=spec.seed).repeat()
                .map(_decoder(spec, description, augment=True), num_parallel_calls=spec.threads)
                .batch(spec.batch_size_global, drop_remainder=True)
                .prefetch(tf.data.AUTOTUNE))
    return _with_threads(pipeline, spec.threads)


def test_dataset(spec: RunSpec, description: networks.Network) -> tf.data.Dataset:
    """The test split once, in stored order, in batches of the case's size (the last one shorter)."""
    files = [str(shard / TFRECORD_FILE) for shard in inputs.test_shards(spec)]
    pipeline = (tf.data.TFRecordDataset(files).map(_decoder(spec, description, augment=False),
                                                    num_parallel_calls=spec.threads)
                .batch(spec.batch_size_global).prefetch(tf.data.AUTOTUNE))
    return _with_threads(pipeline, spec.threads)


class LayerProfiler:
    """TensorFlow's profiler (``tf.profiler.experimental``) over the steps taken under it, its trace (an XSpace)
    read by ``xspace.tensorflow_per_step``. Each op's time counts for the description layer in its name scope
    (the Keras layers are named after the description's), the gradient tape's ops for that layer's backward,
    the optimizer's ops in its ``weight_update`` scope (the first device's) for its update; an op TensorFlow fused
    across layers (a dense layer's matrix product with the ReLU after it, say) counts for the layer that names it.
    On a CPU: each op's kernel time on the host's threads, where ops run on several threads at once and their
    times can sum to more than the step. On GPUs: each GPU kernel's time by the op that launched it, in the step
    that launched it; over several GPUs (MirroredStrategy) each GPU's layers, and the all-reduce's kernels (NCCL's)
    apart. A step begins with its ``step_name`` call."""

    CPU_METHOD = ("TensorFlow's profiler (tf.profiler.experimental): host op times by the Keras layer in their name "
                  "scope (named after the description's layers), the gradient tape's ops as its backward, the "
                  "optimizer's ops in its weight_update scope as its update; fused ops count for the layer that names "
                  "them (a convolution's forward for the ReLU after it); ops run on several threads at once, so the "
                  "layers' times can sum to more than the step")
    GPU_METHOD = ("TensorFlow's profiler (tf.profiler.experimental): GPU kernel times by the op that launched them "
                  "(the kernel's tf_op), by the Keras layer in its name scope (named after the description's "
                  "layers), the gradient tape's ops as its backward, the optimizer's ops in its weight_update scope "
                  "as its update, each in the step that launched it; fused ops count for the layer that names them; "
                  "NCCL's all-reduce kernels apart")

    def __init__(self, layers: list[str], step_name: str, gpus: int):
        self.layers, self.step_name, self.gpus = layers, step_name, gpus
        self.METHOD = self.GPU_METHOD if gpus else self.CPU_METHOD
        self.steps, self.devices, self.all_reduce = [], None, None
        self.layer_updates = self.update = None
        self.update_untimed = "the trace was not read"

    def __enter__(self) -> Self:
        self.logdir = tempfile.mkdtemp(prefix="dlbench-tfprofile-")
        tf.profiler.experimental.start(self.logdir)
        return self

    def __exit__(self, *exception) -> None:
        tf.profiler.experimental.stop()
        try:
            if exception[0] is None:
                (path,) = Path(self.logdir).glob("plugins/profile/*/*.xplane.pb")
                space = xspace.read_space(path.read_bytes())
                devices, self.all_reduce, updates = xspace.tensorflow_per_step(space, self.layers, self.step_name,
                                                                               self.gpus)
                self.layer_updates, self.update, self.update_untimed = updates_found(updates, xspace.UNTIMED)
                self.steps = devices[0]
                self.devices = devices if len(devices) > 1 else None
        finally:
            shutil.rmtree(self.logdir, ignore_errors=True)


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


def _worker_strategy(spec: RunSpec) -> tf.distribute.Strategy:
    """One worker of a group over processes, one per node started by srun (dlbench.run.launch): the others found
    from Slurm's variables, the collectives served on cluster.TENSORFLOW_PORT. The resolver hands each task GPUs;
    on CPUs it is told of one per task it does not hand out (with none, it fails to number the tasks)."""
    per_task = max(spec.gpus, 1)
    resolver = tf.distribute.cluster_resolver.SlurmClusterResolver(
        port_base=cluster.TENSORFLOW_PORT, gpus_per_node=per_task * cluster.local_processes(spec.device),
        gpus_per_task=per_task, auto_set_gpu=spec.gpus > 0)
    return tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)


def run_devices(spec: RunSpec) -> list[str]:
    visible = configure_runtime(spec.threads, spec.precision)
    if spec.gpus == 0:
        return ["/cpu:0"]
    require_gpus(spec, spec.gpus, visible, f"TensorFlow {tf.__version__}")
    return [f"/gpu:{index}" for index in range(spec.gpus)]


class Harness:
    """``devices`` overrides the spec's (tests: logical CPU devices for the multi-device path)."""

    INFERENCE_IDIOM = "model(images, training=False) in a tf.function"

    def __init__(self, spec: RunSpec, description: networks.Network, devices: list[str] | None = None):
        devices = devices or run_devices(spec)
        self.gpus = [device for device in devices if "gpu" in device.lower()]
        # Data parallelism: the global batch is split over the replicas, gradients summed. One device
        # takes the default strategy, which adds nothing to the step (OneDeviceStrategy cost LeNet
        # about a tenth of its step time on CPU).
        self.strategy = strategy = (_worker_strategy(spec) if spec.processes > 1
                                    else tf.distribute.MirroredStrategy(devices) if len(devices) > 1
                                    else tf.distribute.get_strategy())
        if spec.processes > 1:
            self.data_parallel = (f"tf.distribute.MultiWorkerMirroredStrategy over {spec.processes} processes on "
                                  f"{', '.join(strategy.cluster_resolver.cluster_spec().as_dict()['worker'])}: "
                                  "gradients all-reduced by its collectives")
        elif len(devices) > 1:
            self.data_parallel = (f"tf.distribute.MirroredStrategy over {', '.join(devices)}: gradients all-reduced "
                                  "(its default: NCCL between GPUs, a reduction to one device between CPUs)")
        keras.utils.set_random_seed(spec.seed)
        set_precision(spec.precision)
        with strategy.scope(), tf.device(devices[0]):
            self.model = build(description)
            optimizer = keras_optimizer(networks.optimizer(spec.network), spec.learning_rate,
                                        networks.layer_names(description))
            if spec.precision == "fp16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
            # Momentum slots now, in the strategy's scope: created inside the traced step on a
            # replica, they fail under MirroredStrategy (uninitialised placeholder in a cond).
            optimizer.build(self.model.trainable_variables)
        model, batch = self.model, spec.batch_size_global

        def replica_step(images, labels):
            with tf.GradientTape() as tape:
                logits = tf.cast(model(images, training=True), tf.float32)  # the loss in fp32 at any precision
                # the mean over the global batch: the replicas' gradients are summed
                loss = tf.reduce_sum(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)) / batch
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

        # The batch is taken out of the traced step, where the loop can time its wait. The step is called as
        # its one concrete function: tf.function's dispatch (matching the arguments to its traces) cost LeNet
        # on a CPU about 1 % of its step.
        @tf.function(input_signature=iterator.element_spec)
        def train_step(images, labels):
            return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(replica_step, (images, labels)), axis=None)

        self.train_step = train_step.get_concrete_function()
        self.compile, self.loss = spec.compile, None
        self.test_source = (spec, description)
        self.layer_names = networks.layer_names(description)

    def step(self):
        self.loss = self.train_step(*self.next_batch())
        # On CPU the call returns when the step's ops have run; GPU kernels run on after it returns.
        return self.loss.numpy if self.gpus else already_finished

    def inference(self, batch_size: int):
        images = self.next_batch()[0][:batch_size]  # one device: the batch itself, not per-replica parts
        predict = tf.function(lambda batch: self.model(batch, training=False), jit_compile=self.compile)

        def forward():
            self.loss = predict(images)  # what synchronize waits for
            return self.loss.numpy if self.gpus else already_finished
        return forward

    def layer_profiler(self) -> LayerProfiler:
        return LayerProfiler(self.layer_names, self.train_step.graph.name, len(self.gpus))  # its trace event

    def test_logits(self):
        predict = tf.function(lambda batch: self.model(batch, training=False), jit_compile=self.compile,
                              reduce_retracing=True)  # the last batch is shorter
        for images, labels in test_dataset(*self.test_source):
            yield tf.cast(predict(images), tf.float32).numpy(), labels.numpy()

    def synchronize(self) -> None:
        if self.loss is not None:
            self.loss.numpy()

    def final_loss(self) -> float | None:
        """The last step's loss; over several processes, once every worker is seen to hold the same weights (the
        group trained as one: each worker calls it)."""
        if isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy):
            local = tf.add_n([tf.reduce_sum(tf.cast(weight, tf.float64)) for weight in self.model.trainable_variables])
            sums = self.strategy.gather(self.strategy.run(lambda: tf.reshape(local, [1])), axis=0).numpy()
            if not np.allclose(sums, sums[0], rtol=1e-6, atol=1e-9):
                raise RuntimeError(f"the workers ended with different weights (sums {sums.tolist()}): they did not "
                                   "train as one")
        return None if self.loss is None else float(self.loss)

    def allocator_peak_mib(self) -> float | None:
        return gpu_allocator_peak_mib(self.gpus) if self.gpus else None

    def input_wait_seconds(self) -> float:
        return self.next_batch.seconds
