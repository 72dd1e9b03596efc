"""Framework backends behind one contract.

A backend module implements :class:`Backend` (or, for a framework that trains in a worker process under another
interpreter, CNTK and the thesis's MXNet, :class:`WorkerBackend`: :mod:`.worker`), and its ``Harness`` class
implements :class:`Harness`; :func:`load` checks the module against its contract. The checks every backend makes are
written once here (:func:`require_gpus`, :func:`require_one_batch`). Modules are imported lazily, inside the
framework's own environment, so the package itself imports with no framework installed (standard library only).
"""
from __future__ import annotations

import contextlib
import importlib
import itertools
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, distributions, version
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, Self

from ..networks import optimizer
from ..registry import FRAMEWORKS, REGISTRY
from ..tasks import SINGLE_DEVICE_TASKS, SINGLE_DEVICES, TASKS

if TYPE_CHECKING:
    import numpy as np

    from ..networks import Network
    from ..spec import RunSpec


class Harness(Protocol):
    """A framework's network, built for one run with its input pipeline: what every task's run calls. A harness
    implements the contract of each task its framework runs (:data:`dlbench.tasks.TASKS`' ``harness_methods``):
    :class:`TrainingHarness`'s for train, accuracy and profile, :class:`InferenceHarness`'s for inference
    (ONNX Runtime's, raw tf.nn's and hand-written cuDNN calls' run inference only)."""

    def __init__(self, spec: RunSpec, network: Network) -> None:
        """Build the network and its input pipeline for the run, in its precision and compiled if
        ``spec.compile`` (:func:`require_numerics` has checked that the framework has both); raise
        :class:`Unavailable` when the run cannot take place here."""

    def synchronize(self) -> None:
        """Wait for all dispatched work."""

    def allocator_peak_mib(self) -> float | None:
        """The framework allocator's peak; None where the framework keeps none."""

    def input_wait_seconds(self) -> float | None:
        """Seconds the steps so far waited for their batches (an :class:`InputClock`'s); None where the
        framework's step takes its batch itself, out of the loop's sight."""

    # Optional, where the harness holds more than memory (a worker process, a scratch directory):
    # ``close()`` releases it; the runner calls it once, however the run ends (:func:`closing`).


class TrainingHarness(Harness, Protocol):
    """The training tasks' harness, with its optimizer: :func:`dlbench.tasks.loop.timed_loop` drives its steps;
    the accuracy task evaluates it between epochs, the profile task profiles its layers."""

    def step(self) -> Callable[[], None]:
        """Dispatch one training step; return a callable that blocks until that step has finished,
        or :func:`dlbench.tasks.loop.already_finished` when it had finished by the time ``step`` returned, or a
        :class:`dlbench.tasks.loop.Stamped` where the framework's engine stamps the step's completion itself."""

    def final_loss(self) -> float | None:
        """The last step's loss."""

    def test_logits(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The accuracy task's evaluation: the network's logits (float32, images x classes) and the labels of
        every image of the test split, a batch of the case's size at a time, read by the run's input
        pipeline without augmentation (a centre crop, no mirror) and passed forward in evaluation mode
        without gradients, in the run's precision. Training goes on after it as before it."""

    def layer_profiler(self) -> LayerProfiler:
        """The profile task's: a context manager under which the framework's own profiler records the steps
        taken; on its exit, each step's per-layer times (:class:`LayerProfiler`)."""

    # Optional, on a run over several devices: ``data_parallel``, how it trains over them (the record's
    # execution.data_parallel: the framework's mechanism and its collective).
    # Keras's, for a keras_fit run: ``fit(clock)`` trains in the framework's own loop (model.fit) and calls the
    # :class:`dlbench.tasks.loop.StepClock`'s ``start`` before it and ``step_finished`` as each step ends.


class InferenceHarness(Harness, Protocol):
    """The inference task's harness: forward passes timed by :func:`dlbench.tasks.loop.timed_loop`."""

    INFERENCE_IDIOM: str  # for the record: the framework's call that runs a forward pass in inference

    def inference(self, batch_size: int) -> Callable[[], Callable[[], None]]:
        """Put the model in evaluation mode (dropout off, batch norm's running statistics) and return a
        function that dispatches one forward pass without gradients, in the run's precision, of a
        resident batch of ``batch_size`` images taken once from the run's input; it returns like
        :meth:`TrainingHarness.step`, its wait returning when the result can be read."""


class LayerProfiler(Protocol):
    """What a harness's :meth:`TrainingHarness.layer_profiler` returns."""

    METHOD: str  # for the record: the profiler, and how its events are mapped to the description's layers

    def __enter__(self) -> Self: ...

    def __exit__(self, *exception) -> None: ...

    steps: list[dict[str, tuple[float, float]]]  # after exit: per step, each layer's (forward, backward) seconds,
    # the layers named as networks.layer_names names them
    # Over several devices, where it times them apart (else None): each device's steps as ``steps`` (the first's
    # are ``steps``), and each step's all-reduce seconds
    devices: list[list[dict[str, tuple[float, float]]]] | None
    all_reduce: list[float] | None
    # The optimizer's update of the weights (seed 004's momentum update), the first device's: per step, each
    # layer's update seconds where its events say whose weights they update (``layer_updates``, every layer named,
    # 0 for a layer without weights); else None, and per step the whole update's seconds (``update``; the layers'
    # sum where they are known); where it does not time the update, None and ``update_untimed`` says why
    layer_updates: list[dict[str, float]] | None
    update: list[float] | None
    update_untimed: str | None


UPDATE_SCOPE = "weight_update"  # the name scope (Keras) or record_function (torch) of the optimizer's update


def whole_update(update: list[float], untimed: str) -> tuple[list[float] | None, str | None]:
    """A profiler's ``update`` and ``update_untimed`` from the update seconds per step it read: a trace holding no
    event of the update did not time it (it did not take no time): None, and ``untimed`` says why."""
    return (update, None) if any(update) else (None, untimed)


def updates_found(layer_updates: list[dict[str, float]], untimed: str):
    """A profiler's ``layer_updates``, ``update`` and ``update_untimed`` from the layers' update seconds per step
    it read (:func:`whole_update`)."""
    update, why = whole_update([sum(step.values()) for step in layer_updates], untimed)
    return layer_updates if update else None, update, why


class WorkerHarness(Harness, Protocol):
    """The harness of a framework that builds and trains in a worker process under another interpreter."""

    def worker_cpu_seconds(self) -> float:
        """CPU time of the worker process, which the runner's own does not include."""


class Backend(Protocol):
    """A backend module whose framework trains in the runner's process."""

    PACKAGES: tuple[str, ...]  # distributions whose versions the record keeps
    Harness: type[Harness]

    def framework_version(self) -> str: ...

    def cuda_build(self) -> str | None:
        """The CUDA version the installed framework was built for; None for a CPU build."""

    def gpu_code(self) -> GpuCode | str:
        """On a GPU run, before the harness is built: the GPU code the CUDA build carries and the GPUs it
        sees, as the framework reports them (:func:`check_gpu_code`); or why it cannot be told."""

    def build(self, network: Network) -> Any:
        """The framework's model of a description (see :class:`dlbench.networks.Builder`)."""

    def trainable_parameters(self, model: Any) -> int: ...

    def forward_shape(self, model: Any, images: np.ndarray) -> tuple: ...


class WorkerBackend(Protocol):
    """A backend module whose framework builds and trains in a worker under another interpreter."""

    Harness: type[WorkerHarness]

    def describe(self) -> dict:
        """The worker's Python, framework and package versions, and ``cuda_build`` (see
        :meth:`Backend.cuda_build`), for the record."""

    def gpu_code(self) -> GpuCode | str:
        """See :meth:`Backend.gpu_code`."""


def _members(contract: type) -> set[str]:
    return {name for name in vars(contract) if not name.startswith("_")} | set(contract.__annotations__)


class Unavailable(RuntimeError):
    """The run cannot take place on this machine (framework missing, too few GPUs, ...)."""


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


def require_task(spec: RunSpec) -> None:
    """The framework runs the task; inference and profiles run on one device (the record of a run on several
    says so)."""
    framework = REGISTRY[spec.framework]
    if spec.task not in framework.runs:
        why = framework.not_yet.get(spec.task)
        raise Unavailable(f"{spec.task}: {spec.framework} runs {', '.join(framework.runs)} only"
                          + (f" ({why})" if why else ""))
    if spec.task in SINGLE_DEVICE_TASKS and spec.device not in SINGLE_DEVICES:
        raise Unavailable(f"{spec.task} on {spec.device}: {spec.task} runs on one device "
                          f"({', '.join(SINGLE_DEVICES)}); " + SINGLE_DEVICE_TASKS[spec.task])


def execution(spec: RunSpec) -> dict:
    """How the run's math is done, for its record: what its precision and compile setting mean in
    its framework, and the network's optimizer (:class:`dlbench.networks.Optimizer`)."""
    framework, rule = REGISTRY[spec.framework], optimizer(spec.network)
    return {"precision": spec.precision, "tf32": spec.precision == "tf32",
            "compute_dtype": {"bf16": "bfloat16", "fp16": "float16"}.get(spec.precision, "float32"),
            "loss_scaling": spec.precision == "fp16",
            "compiler": framework.compiler if spec.compile else framework.always_compiled,
            "optimizer": asdict(rule), "optimizer_difference": framework.optimizer_differences.get(rule.kind)}


def load(framework: str) -> ModuleType:
    if framework not in REGISTRY:
        raise KeyError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    if REGISTRY[framework].keras:  # read when Keras is imported (Keras 2's in its worker: by its backend module)
        os.environ["KERAS_BACKEND"] = framework.split("-", 1)[1]
    try:
        module = importlib.import_module(f"{__name__}.{REGISTRY[framework].module}")
    except ImportError as error:
        raise Unavailable(f"{framework} cannot be imported: {error}") from error
    check_contract(module)
    check_harness(framework, module.Harness)
    return module


def check_contract(module: ModuleType) -> ModuleType:
    """The module, if it has everything of its contract (:class:`Backend` or :class:`WorkerBackend`)."""
    contract = WorkerBackend if hasattr(module, "describe") else Backend
    missing = sorted(_members(contract) - set(dir(module)))
    if missing:
        raise TypeError(f"{module.__name__} does not implement backends.{contract.__name__}: no {', '.join(missing)}")
    return module


def check_harness(framework: str, harness: type) -> None:
    """The harness class has the methods of every task its framework runs (the registry's ``runs``: a task it
    does not run yet is named in its row's ``not_yet``, with why)."""
    for task in REGISTRY[framework].runs:
        missing = [name for name in TASKS[task].harness_methods if not hasattr(harness, name)]
        if missing:
            raise TypeError(f"{framework}'s Harness cannot run {task}: no {', '.join(missing)} (implement "
                            f"them, or name {task} in its registry row's not_yet with why)")


def closing(harness: Harness) -> contextlib.AbstractContextManager[Harness]:
    """The harness, closed after the block where it has a ``close`` (the :class:`Harness` contract's option)."""
    return contextlib.closing(harness) if hasattr(harness, "close") else contextlib.nullcontext(harness)


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


@dataclass(frozen=True)
class GpuCode:
    """What GPU code a framework's CUDA build carries, and the GPUs it sees, as the framework reports them.
    Architectures are compute capabilities times ten (sm_90: 90)."""

    framework: str  # name and version, for the messages
    cuda: str | None
    sass: tuple[int, ...] = ()  # compiled kernels (cubins): each runs on its major version, minor the same or later
    ptx: tuple[int, ...] = ()  # PTX, which the driver compiles for a GPU of that capability or later, at load
    gpus: tuple[tuple[str, int], ...] = ()  # (model, capability) of each GPU the run uses
    compiled_at_run_time: bool = False  # XLA: every kernel compiled for the GPU it finds
    # Architecture-specific code (sm_90a, compute_120a: Hopper's and Blackwell's own instructions): it runs on
    # that very capability alone, neither a later minor version nor a later major one
    sass_exact: tuple[int, ...] = ()
    ptx_exact: tuple[int, ...] = ()

    @classmethod
    def from_arch_names(cls, framework: str, cuda: str | None, names, gpus, ptx_with_kernels: bool = False) -> GpuCode:
        """From the names a build lists (nvcc's -gencode targets): ``sm_75`` kernels; ``sm_90a``, kernels for sm_90
        alone; ``sm_100f``, kernels for the sm_100 family (as plain ones); ``compute_90``, PTX, and where
        ``ptx_with_kernels`` (TensorFlow's build info, whose ``compute_90`` builds sm_90's kernels and its PTX) the
        kernels too."""
        found = []
        for name in names:
            kind, arch = name.split("_", 1)
            digits = "".join(itertools.takewhile(str.isdigit, arch))
            found.append((kind, int(digits), arch[len(digits):] == "a"))
        kernels = {"sm", "compute"} if ptx_with_kernels else {"sm"}

        def of(kinds, exact):
            return tuple(sorted({number for kind, number, specific in found if kind in kinds and specific == exact}))

        return cls(framework, cuda, of(kernels, False), of({"compute"}, False), tuple(gpus),
                   sass_exact=of(kernels, True), ptx_exact=of({"compute"}, True))


def _sm(capabilities, exact=()) -> str:
    found = sorted({(number, f"sm_{number}") for number in capabilities} | {(number, f"sm_{number}a")
                                                                           for number in exact})
    return "none" if not found else found[0][1] if len(found) == 1 else f"{found[0][1]}…{found[-1][1]}"


def _number(arch: str) -> int:
    return int("".join(filter(str.isdigit, arch)))


def check_gpu_code(code: GpuCode | str) -> str:
    """How each GPU of the run runs the build's code, for the record (``provenance.gpu_code``): its own
    kernels, or PTX the driver compiles when the first step loads it (that step's time holds the compile);
    :class:`Unavailable` where the build has neither, before the run, never "no kernel image is available"
    in its timed loop. A string ``code`` is why the framework cannot say: not checked."""
    if isinstance(code, str):
        return f"not checked: {code}"
    said = []
    for model, capability in code.gpus:
        if code.compiled_at_run_time:
            said.append(f"{model} (sm_{capability}): kernels compiled for it at run time")
            continue
        kernels = [f"sm_{sass}" for sass in code.sass if sass // 10 == capability // 10 and sass <= capability]
        kernels += [f"sm_{sass}a" for sass in code.sass_exact if sass == capability]
        ptx = [f"compute_{ptx}" for ptx in sorted(code.ptx) if ptx <= capability]
        ptx += [f"compute_{ptx}a" for ptx in code.ptx_exact if ptx == capability]
        if kernels:
            said.append(f"{model} (sm_{capability}): the build's {max(kernels, key=_number)} kernels")
        elif ptx:
            said.append(f"{model} (sm_{capability}): the build's PTX {max(ptx, key=_number)}, JIT-compiled by the "
                        "driver when the first step loads it (that step's time holds the compile)")
        else:
            every_ptx = [*code.ptx, *code.ptx_exact]
            carried = _sm(code.sass, code.sass_exact) + (f" and PTX compute_{max(every_ptx)}" if every_ptx else "")
            raise Unavailable(f"{code.framework} (CUDA {code.cuda}) has kernels for {carried}; this GPU ({model}) "
                              f"is sm_{capability}, which it has no kernels for")
    return "; ".join(dict.fromkeys(said))


def environment_prefix(spec: RunSpec) -> str:
    """Where the run's framework is installed: its worker's environment, or the runner's own."""
    from ..envs import WORKER_PYTHONS

    environment = REGISTRY[spec.framework].environment
    if environment not in WORKER_PYTHONS:
        return sys.prefix
    from .worker import worker_python

    return str(Path(worker_python(environment)).parent.parent)


def require_cuda_build(spec: RunSpec, described: dict) -> None:
    """A GPU run on a CPU build of its framework would train on the CPU: it cannot take place."""
    if spec.gpus and described["framework_build"] == "cpu":
        raise Unavailable(f"{spec.framework} {described['framework_version']} in {environment_prefix(spec)} is a CPU "
                          "build; "
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
