"""Framework backends behind one contract.

A backend module implements :class:`Backend` (or, for a framework that trains in a worker process
under another interpreter, CNTK, :class:`WorkerBackend`), and its ``Trainer`` class implements
:class:`Trainer`; :func:`load` checks the module against its contract. The checks every backend
makes are written once here (:func:`require_gpus`, :func:`require_one_batch`). Modules are imported
lazily, inside the framework's own environment, so the package itself imports with no framework
installed (standard library only).
"""
from __future__ import annotations

import importlib
import itertools
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distributions, version
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

    from ..networks import Network
    from ..spec import RunSpec


class Trainer(Protocol):
    """What the runner's timed loop (:func:`dlbench.runner.timed_loop`) drives."""

    def __init__(self, spec: RunSpec, network: Network) -> None:
        """Build the network and its input pipeline for the run, in its precision and compiled if
        ``spec.compile`` (:func:`require_numerics` has checked that the framework has both); raise
        :class:`Unavailable` when the run cannot take place here."""

    def step(self) -> Callable[[], None]:
        """Dispatch one training step; return a callable that blocks until that step has finished,
        or :func:`already_finished` when it had finished by the time ``step`` returned."""

    def synchronize(self) -> None:
        """Wait for all dispatched work."""

    def final_loss(self) -> float | None:
        """The last step's loss."""

    def allocator_peak_mib(self) -> float | None:
        """The framework allocator's peak; None where the framework keeps none."""

    def input_wait_seconds(self) -> float | None:
        """Seconds the steps so far waited for their batches (an :class:`InputClock`'s); None where the
        framework's step takes its batch itself, out of the loop's sight."""


class WorkerTrainer(Trainer, Protocol):
    def worker_cpu_seconds(self) -> float:
        """CPU time of the worker process, which the runner's own does not include."""


class Backend(Protocol):
    """A backend module whose framework trains in the runner's process."""

    PACKAGES: tuple[str, ...]  # distributions whose versions the record keeps
    Trainer: type[Trainer]

    def framework_version(self) -> str: ...

    def cuda_build(self) -> str | None:
        """The CUDA version the installed framework was built for; None for a CPU build."""

    def build(self, network: Network) -> Any:
        """The framework's model of a description (see :class:`dlbench.networks.Builder`)."""

    def trainable_parameters(self, model: Any) -> int: ...

    def forward_shape(self, model: Any, images: np.ndarray) -> tuple: ...


class WorkerBackend(Protocol):
    """A backend module whose framework builds and trains in a worker under another interpreter."""

    Trainer: type[WorkerTrainer]

    def describe(self) -> dict:
        """The worker's Python, framework and package versions, and ``cuda_build`` (see
        :meth:`Backend.cuda_build`), for the record."""


def _members(contract: type) -> set[str]:
    return {name for name in vars(contract) if not name.startswith("_")} | set(contract.__annotations__)


class Unavailable(RuntimeError):
    """The run cannot take place on this machine (framework missing, too few GPUs, ...)."""


@dataclass(frozen=True)
class Framework:
    """One row of the framework registry: everything the workflow needs to know to run it."""

    name: str  # as in configs, paths and records
    module: str  # its backend, dlbench.backends.<module>
    environment: str  # envs/<environment>.*, .venvs/<environment>: Keras shares its backend's
    data_format: str  # the format its input pipeline reads (dlbench.formats)
    # Who starts the processes of a run over several (<n>x<device>; dlbench.launch): "torchrun" starts n
    # runners; "mpiexec" is started by the one runner's backend, one MPI rank per device (gpu<g> too).
    launcher: str | None = None
    # Of spec.PRECISIONS, those the backend sets up (tf32: a switch for both its cuDNN and its
    # cuBLAS calls; NVIDIA_TF32_OVERRIDE=0 can only switch TF32 off). TF32 is a GPU math mode.
    cpu_precisions: tuple[str, ...] = ("fp32",)
    gpu_precisions: tuple[str, ...] = ("fp32",)
    compiler: str | None = None  # what compile: true switches on
    always_compiled: str | None = None  # what compiles every run, compile: false too


MIXED = ("bf16", "fp16")
# The one place a framework is added: the thesis's five, then Keras 3's high-level API on three
# backends (seed 001's keras-mxnet comparison in its modern form). config/schema.yaml, the run
# record's schema and README's table are checked against it (tests/test_registry.py).
REGISTRY = {framework.name: framework for framework in (
    Framework("caffe", "caffe", "caffe", "lmdb", always_compiled="Caffe's static net"),
    Framework("tensorflow", "tensorflow", "tensorflow", "tfrecord", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="XLA (tf.function jit_compile)",
              always_compiled="tf.function graph"),
    Framework("pytorch", "pytorch", "pytorch", "lmdb", launcher="torchrun", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="torch.compile"),
    Framework("mxnet", "mxnet", "mxnet", "recordio", cpu_precisions=("fp32", "bf16"), gpu_precisions=("fp32", "fp16"),
              always_compiled="Gluon hybridize (static graph)"),
    Framework("cntk", "cntk", "cntk", "cntk", launcher="mpiexec", always_compiled="CNTK's static graph"),
    Framework("keras-tensorflow", "keras_api", "tensorflow", "lmdb", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="XLA (Keras jit_compile)",
              always_compiled="tf.function graph"),
    Framework("keras-jax", "keras_api", "jax", "lmdb", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), always_compiled="jax.jit (XLA)"),
    Framework("keras-torch", "keras_api", "pytorch", "lmdb", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="torch.compile (Keras jit_compile)"),
)}
FRAMEWORKS = tuple(REGISTRY)
ENVIRONMENTS = {name: framework.environment for name, framework in REGISTRY.items()}


def registry_table() -> str:
    """The registry as README's Markdown table."""
    header = ("framework", "backend module", "environment", "data format", "over processes",
              "precisions on CPUs", "on GPUs", "compile: true", "compiled always")
    rows = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    rows += [f"| `{f.name}` | `backends/{f.module}.py` | `{f.environment}` | `{f.data_format}` | "
             f"{f.launcher or 'no'} | {', '.join(f.cpu_precisions)} | {', '.join(f.gpu_precisions)} | "
             f"{f.compiler or '—'} | {f.always_compiled or '—'} |" for f in REGISTRY.values()]
    return "\n".join(rows)


def require_numerics(spec: RunSpec) -> None:
    """The run's precision and compile setting are ones its framework has on its device."""
    framework = REGISTRY[spec.framework]
    on_gpu = spec.gpus > 0
    allowed = framework.gpu_precisions if on_gpu else framework.cpu_precisions
    if spec.precision not in allowed:
        why = ("TF32 is a GPU math mode" if spec.precision == "tf32" and not on_gpu
               else f"{spec.framework} has {', '.join(allowed)} wired on {'GPUs' if on_gpu else 'CPUs'}")
        raise Unavailable(f"{spec.precision} on {spec.device}: {why}")
    if spec.compile and not framework.compiler:
        if framework.always_compiled:
            raise Unavailable(f"compile: {spec.framework} always compiles ({framework.always_compiled}): "
                              "its runs without compile are compiled")
        raise Unavailable(f"compile: {spec.framework} has no compiler to switch on")


def execution(spec: RunSpec) -> dict:
    """How the run's math is done, for its record: what its precision and compile setting mean in
    its framework."""
    framework = REGISTRY[spec.framework]
    return {"precision": spec.precision, "tf32": spec.precision == "tf32",
            "compute_dtype": {"bf16": "bfloat16", "fp16": "float16"}.get(spec.precision, "float32"),
            "loss_scaling": spec.precision == "fp16",
            "compiler": framework.compiler if spec.compile else framework.always_compiled}


def load(framework: str) -> ModuleType:
    if framework not in REGISTRY:
        raise KeyError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    if framework.startswith("keras-"):
        os.environ["KERAS_BACKEND"] = framework.removeprefix("keras-")  # read when Keras is imported
    try:
        module = importlib.import_module(f"{__name__}.{REGISTRY[framework].module}")
    except ImportError as error:
        raise Unavailable(f"{framework} cannot be imported: {error}") from error
    return check_contract(module)


def check_contract(module: ModuleType) -> ModuleType:
    """The module, if it has everything of its contract (:class:`Backend` or :class:`WorkerBackend`)."""
    contract = WorkerBackend if hasattr(module, "describe") else Backend
    missing = sorted(_members(contract) - set(dir(module)))
    if missing:
        raise TypeError(f"{module.__name__} does not implement backends.{contract.__name__}: no {', '.join(missing)}")
    return module


def require_gpus(spec: RunSpec, needed: int, visible: int, framework: str) -> None:
    """The run cannot take place where its framework sees fewer GPUs than it needs."""
    if visible < needed:
        raise Unavailable(f"{spec.device} needs {needed} GPU(s); {framework} sees {visible}")


def require_one_batch(spec: RunSpec, images: int, batch: int) -> None:
    """A dataset smaller than one batch cannot feed a step."""
    if images < batch:
        raise ValueError(f"{spec.dataset} has {images} training images, fewer than one batch of {batch}")


class InputClock:
    """A batch source that sums the seconds its caller waits on it: from asking for the next batch to
    having it decoded and on its way to the device (a copy that runs on after the call is not waited for)."""

    def __init__(self, fetch: Callable[[], Any]):
        self.fetch, self.seconds = fetch, 0.0

    def __call__(self) -> Any:
        start = time.perf_counter()
        try:
            return self.fetch()
        finally:
            self.seconds += time.perf_counter() - start


def already_finished() -> None:
    """What ``step()`` returns when the step ran eagerly and had finished by the time it returned."""


def describe(backend: ModuleType) -> dict:
    """The framework version and build (``cpu`` or ``cuda <version>``), Python and package versions
    that the run's record keeps."""
    if hasattr(backend, "describe"):  # the framework runs in a worker under another interpreter
        found = backend.describe()
        cuda = found.pop("cuda_build")
    else:
        found = {"framework_version": backend.framework_version(), "python": platform.python_version(),
                 "packages": package_versions(backend.PACKAGES)}
        cuda = backend.cuda_build()
    return {**found, "framework_build": f"cuda {cuda}" if cuda else "cpu"}


def require_cuda_build(spec: RunSpec, described: dict) -> None:
    """A GPU run on a CPU build of its framework would train on the CPU: it cannot take place."""
    if spec.gpus and described["framework_build"] == "cpu":
        raise Unavailable(f"{spec.framework} {described['framework_version']} in {sys.prefix} is a CPU build; "
                          "on a node where nvidia-smi lists GPUs the workflow builds the CUDA one (rebuild: "
                          "snakemake --forcerun framework_venv)")


def cuda_of_distribution(prefix: str) -> str | None:
    """The CUDA version in the name of an installed distribution ``<prefix><digits>...`` (jax-cuda12-plugin:
    "12", mxnet-cu117: "11.7"), for frameworks that say their build only in their package's name."""
    for distribution in distributions():
        name = (distribution.metadata["Name"] or "").lower()
        if name.startswith(prefix) and name[len(prefix):][:1].isdigit():
            digits = "".join(itertools.takewhile(str.isdigit, name[len(prefix):]))
            return digits if len(digits) <= 2 else f"{digits[:-1]}.{digits[-1]}"
    return None


def package_versions(names: tuple[str, ...]) -> dict:
    """Installed versions by distribution name; None for one not installed (tensorflow-cpu vs tensorflow)."""
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found
