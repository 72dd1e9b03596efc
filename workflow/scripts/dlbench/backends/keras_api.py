"""Keras 3's high-level API on the TensorFlow, JAX or PyTorch backend (frameworks
``keras-tensorflow``, ``keras-jax``, ``keras-torch``; :func:`dlbench.backends.load` sets
``KERAS_BACKEND`` before Keras is imported).

The model is the same Keras model the TensorFlow backend builds, compiled by ``model.compile``
and trained with ``train_on_batch``, as a user of the API would; set beside each backend's native
loop, the report shows what the high-level API costs (seed 002's question). ``jit_compile`` is the
run's compile setting (XLA on TensorFlow, ``torch.compile`` on PyTorch); on JAX it is always on, as
JAX is meant to run. Mixed precision is Keras's dtype policy (``model.compile`` wraps the optimizer
in a ``LossScaleOptimizer`` for fp16). Real and generated data come from Caffe's LMDB, read
in-process in runs of stored records.
"""
from __future__ import annotations

import contextlib

import keras
import numpy as np

from .. import networks
from ..spec import RunSpec
from ..tasks.loop import already_finished
from . import (
    UPDATE_SCOPE,
    GpuCode,
    InputClock,
    Unavailable,
    cuda_of_distribution,
    inputs,
    require_gpus,
    require_one_batch,
)
from .keras_layers import build, forward_shape, keras_layout, keras_optimizer, set_precision, trainable_parameters  # noqa: F401 - the backend interface
from .lmdb_records import LmdbRecords, in_order, shuffled_runs

PACKAGES = ("keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch", "numpy")


def framework_version() -> str:
    return keras.__version__


def cuda_build() -> str | None:
    """The Keras backend's framework's build."""
    backend = keras.backend.backend()
    if backend == "torch":
        from .pytorch import cuda_build as torch_cuda_build

        return torch_cuda_build()
    if backend == "tensorflow":
        from .tensorflow import cuda_build as tensorflow_cuda_build

        return tensorflow_cuda_build()
    return cuda_of_distribution("jax-cuda")  # jax[cuda12] installs jax-cuda12-plugin


def gpu_code() -> GpuCode:
    """The Keras backend's framework's: torch's and TensorFlow's compiled architectures; XLA (JAX) compiles
    every kernel for the GPU it finds."""
    backend = keras.backend.backend()
    if backend == "torch":
        from .pytorch import gpu_code as torch_gpu_code

        return torch_gpu_code()
    if backend == "tensorflow":
        from .tensorflow import gpu_code as tensorflow_gpu_code

        return tensorflow_gpu_code()
    import jax

    gpus = [(device.device_kind, round(10 * float(device.compute_capability)))
            for device in jax.devices() if device.platform == "gpu"]
    return GpuCode(f"jax {jax.__version__}", cuda_build(), gpus=tuple(gpus), compiled_at_run_time=True)


def _configure(spec: RunSpec) -> None:
    """The backend's threads (PyTorch and TensorFlow; XLA on CPU uses the cores it sees), TF32 and
    one GPU."""
    if spec.gpus > 1:
        raise Unavailable(f"{spec.device}: Keras's multi-device training is backend-specific "
                          "(keras.distribution is JAX-only); the native backends run on N GPUs")
    backend = keras.backend.backend()
    if backend == "torch":
        import torch

        from .pytorch import set_tf32

        torch.set_num_threads(spec.threads)
        set_tf32(spec.precision)
        visible = torch.cuda.device_count()
    elif backend == "tensorflow":
        from .tensorflow import configure_runtime

        visible = configure_runtime(spec.threads, spec.precision)
    else:
        import jax

        jax.config.update("jax_default_matmul_precision", "tensorfloat32" if spec.precision == "tf32" else "float32")
        visible = sum(device.platform == "gpu" for device in jax.devices())
    require_gpus(spec, spec.gpus, visible, f"Keras's {backend} backend")
    set_precision(spec.precision)


# What starts a step of train_on_batch in the profiler's trace: the tf.function Keras's TensorFlow trainer runs
# for it, the jitted train_step of its JAX trainer (keras/src/backend/<backend>/trainer.py).
TENSORFLOW_STEP, JAX_STEP = "one_step_on_data", "PjitFunction(train_step)"


@contextlib.contextmanager
def call_scopes(layers: dict[str, keras.Layer], optimizer: keras.optimizers.Optimizer):
    """While open, each Keras layer's ``call`` runs inside a ``record_function`` named after it, and the
    optimizer's ``apply`` (every weight's update, in one call on torch) inside one named ``weight_update``. On torch
    a Keras layer is a torch module, but Keras's own ``__call__`` bypasses the module's hooks."""
    import torch

    def scoped(name: str, call):
        def call_in_scope(*args, **kwargs):
            with torch.profiler.record_function(name):
                return call(*args, **kwargs)
        return call_in_scope
    scoped_objects = {**{name: (layer, "call") for name, layer in layers.items()},
                      UPDATE_SCOPE: (optimizer, "apply")}
    for name, (owner, method) in scoped_objects.items():
        setattr(owner, method, scoped(name, getattr(owner, method)))
    try:
        yield
    finally:
        for owner, method in scoped_objects.values():
            delattr(owner, method)  # the class's again


def normalised(images: np.ndarray, mean: np.ndarray, std: np.ndarray, shape: tuple) -> np.ndarray:
    """Keras's layout, channels last: the per-channel statistics apply along the last axis. Images stored at
    another size than ``shape`` (a case's input_size) are resized (bilinear) and made RGB, by the backend."""
    images = (keras_layout(images).astype(np.float32) - mean) / std
    channels, *size = shape
    if images.ndim == 4 and images.shape[1:] != (*size, channels):  # images, not sequences
        resized = keras.ops.image.resize(images, size, interpolation="bilinear", data_format="channels_last")
        images = np.repeat(keras.ops.convert_to_numpy(resized), channels // images.shape[-1], axis=-1)
    return images


def training_arrays(spec: RunSpec, description: networks.Network, mean, std) -> tuple[np.ndarray, np.ndarray]:
    """The training split as normalised NumPy arrays, as seed 001's scripts loaded theirs for ``model.fit``. Synthetic
    data: the resident batch repeated, as many batches as the run takes (at most FIT_ARRAYS_GIB's worth, and fit's
    epochs go round them); real and generated data: every stored training image, as stored (no crop or mirror)."""
    shape = description.input_shape
    image_bytes = 4 * int(np.prod(shape))
    if spec.data_mode == "synthetic":
        images, labels = inputs.synthetic_batch(spec, description)
        images = normalised(images, mean, std, shape)
        copies = max(1, min(spec.iterations, inputs.FIT_ARRAYS_GIB * 2**30 // (image_bytes * len(images))))
        return np.concatenate([images] * copies), np.concatenate([labels] * copies)
    records = LmdbRecords(inputs.train_shards(spec), inputs.stored_shape(spec, description), augment=False)
    require_one_batch(spec, len(records), spec.batch_size_global)
    if len(records) * image_bytes > inputs.FIT_ARRAYS_GIB * 2**30:
        raise Unavailable(f"keras_fit holds the training split in memory as NumPy arrays: {len(records)} images of "
                          f"{image_bytes / 2**20:.1f} MiB are more than {inputs.FIT_ARRAYS_GIB} GiB")
    images, labels = records.batch(list(range(len(records))))
    return normalised(images, mean, std, shape), np.asarray(labels)


class Harness:
    INFERENCE_IDIOM = "model.predict_on_batch(images)"

    def __init__(self, spec: RunSpec, description: networks.Network):
        _configure(spec)
        self.gpus = spec.gpus
        keras.utils.set_random_seed(spec.seed)
        self.model = build(description)
        self.model.compile(optimizer=keras_optimizer(networks.optimizer(spec.network), spec.learning_rate,
                                                     networks.layer_names(description)),
                           loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                           jit_compile=spec.compile or keras.backend.backend() == "jax")
        mean, std = inputs.pixel_statistics(spec)
        shape = description.input_shape
        self.test_source = (spec, inputs.stored_shape(spec, description), mean, std, shape)
        self.description = description
        self.batch_size, self.arrays = spec.batch_size_global, None
        if spec.keras_fit:
            self.arrays = training_arrays(spec, description, mean, std)
            self.next_batch = None  # fit takes its batches from the arrays itself
        elif spec.data_mode == "synthetic":
            images, labels = inputs.synthetic_batch(spec, description)
            resident = (keras.ops.convert_to_tensor(normalised(images, mean, std, shape)),
                        keras.ops.convert_to_tensor(labels))
            self.next_batch = InputClock(lambda: resident)
        else:
            records = LmdbRecords(inputs.train_shards(spec), inputs.stored_shape(spec, description), spec.seed)
            require_one_batch(spec, len(records), spec.batch_size_global)
            rng, runs = np.random.default_rng(spec.seed), len(records) // spec.batch_size_global

            def epochs():
                while True:
                    for indices in shuffled_runs(len(records), spec.batch_size_global, rng.permutation(runs)):
                        images, labels = records.batch(indices)
                        yield normalised(images, mean, std, shape), labels

            batches = epochs()
            self.next_batch = InputClock(lambda: next(batches))
        self.loss = None

    def step(self):
        self.loss = self.model.train_on_batch(*self.next_batch())
        return already_finished  # train_on_batch returns the loss as a host number

    def fit(self, clock) -> None:
        """Seed 001's training: ``model.fit`` over the NumPy arrays (shuffled, Keras's default), as many epochs as
        the run's iterations need, stopped after the last; ``clock`` times each step from Keras's per-step
        callback, which waits for the step's loss on the host as train_on_batch does."""
        images, labels = self.arrays

        def step_ended(batch, logs):
            self.loss = keras.ops.convert_to_numpy(logs["loss"])
            clock.step_finished()
            if len(clock.times) == clock.iterations:
                self.model.stop_training = True
        batches = len(images) // self.batch_size
        clock.completion = "Keras's callback at each step's end in model.fit's loop, its loss read on the host"
        clock.start()
        self.model.fit(images, labels, batch_size=self.batch_size, epochs=-(-clock.iterations // batches),
                       steps_per_epoch=batches, verbose=0,
                       callbacks=[keras.callbacks.LambdaCallback(on_train_batch_end=step_ended)])
        if len(clock.times) != clock.iterations:
            raise RuntimeError(f"model.fit ran {len(clock.times)} steps of {clock.iterations}")

    def inference(self, batch_size: int):
        images = self.next_batch()[0][:batch_size]

        def forward():
            self.model.predict_on_batch(images)
            return already_finished  # predict_on_batch returns the predictions as a NumPy array
        return forward

    def layer_profiler(self):
        """The Keras backend's framework's own profiler, with the Keras layers, named after the description's:
        TensorFlow's and JAX's by name scope, torch's by a record_function around each layer's call."""
        backend, names = keras.backend.backend(), networks.layer_names(self.description)
        if backend == "tensorflow":
            from .tensorflow import LayerProfiler as TensorFlowProfiler

            return TensorFlowProfiler(names, TENSORFLOW_STEP, self.gpus)
        if backend == "torch":
            from .pytorch import LayerProfiler as TorchProfiler

            layers = {layer.name: layer for layer in self.model.layers if layer.name in names}
            return TorchProfiler(names, bool(self.gpus), call_scopes(layers, self.model.optimizer), method=(
                "torch.profiler under Keras: a record_function around each Keras layer's call (named after the "
                "description's layers), each layer's backward the autograd functions of its ops' sequence numbers, "
                "the optimizer's apply (one call for every weight) timed whole"))
        from .xspace import LayerProfiler as JaxProfiler

        return JaxProfiler(names, JAX_STEP, bool(self.gpus))

    def test_logits(self):
        spec, stored, mean, std, shape = self.test_source
        records = LmdbRecords(inputs.test_shards(spec), stored, augment=False)
        for indices in in_order(len(records), spec.batch_size_global):
            images, labels = records.batch(indices)
            yield np.asarray(self.model.predict_on_batch(normalised(images, mean, std, shape)), np.float32), labels

    def synchronize(self) -> None:
        pass  # every step finished before it returned

    def final_loss(self) -> float | None:
        return None if self.loss is None else float(self.loss)

    def input_wait_seconds(self) -> float | None:
        return None if self.next_batch is None else self.next_batch.seconds  # fit's input: inside its steps

    def allocator_peak_mib(self) -> float | None:
        """The Keras backend's own allocator peak on the GPU (None on CPU)."""
        if self.gpus == 0:
            return None
        backend = keras.backend.backend()
        if backend == "torch":
            import torch

            from .pytorch import gpu_allocator_peak_mib

            return gpu_allocator_peak_mib([torch.device("cuda", 0)])
        if backend == "tensorflow":
            from .tensorflow import gpu_allocator_peak_mib

            return gpu_allocator_peak_mib(["/gpu:0"])
        import jax

        return sum(device.memory_stats()["peak_bytes_in_use"] for device in jax.local_devices()
                   if device.platform == "gpu") / 2**20
