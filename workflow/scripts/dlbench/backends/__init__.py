"""Framework backends behind one interface.

A backend module defines ``framework_version()`` and ``PACKAGES`` (the distributions whose versions
the record keeps), ``build(network)``, ``trainable_parameters(model)``, ``forward_shape(model,
images)`` and ``trainer(spec, network)`` returning an object with ``step()`` (dispatches one
training step and returns a callable that blocks until that step has finished), ``synchronize()``
(waits for all pending work), ``final_loss()`` and ``allocator_peak_mib()``. A framework that
trains in a worker process under another interpreter (CNTK) has ``describe()`` instead of the
first two, builds its models in the worker, and its trainer adds ``worker_cpu_seconds()``.
Modules are imported lazily, inside the framework's own environment, so the package itself imports
with no framework installed.
"""
from __future__ import annotations

import importlib
import os
import platform
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType


class Unavailable(RuntimeError):
    """The run cannot take place on this machine (framework missing, too few GPUs, ...)."""


@dataclass(frozen=True)
class Framework:
    """One row of the framework registry: everything the workflow needs to know to run it."""

    name: str  # as in configs, paths and records
    module: str  # its backend, dlbench.backends.<module>
    environment: str  # envs/<environment>.*, .venvs/<environment>: Keras shares its backend's
    data_format: str  # the format its input pipeline reads (dlbench.formats)
    over_processes: bool = False  # data parallelism over processes (<n>x<device>) is wired (dlbench.launch)


# The one place a framework is added: the thesis's five, then Keras 3's high-level API on three
# backends (seed 001's keras-mxnet comparison in its modern form). config/schema.yaml, the run
# record's schema and README's table are checked against it (tests/test_registry.py).
REGISTRY = {framework.name: framework for framework in (
    Framework("caffe", "caffe", "caffe", "lmdb"),
    Framework("tensorflow", "tensorflow", "tensorflow", "tfrecord"),
    Framework("pytorch", "pytorch", "pytorch", "lmdb", over_processes=True),
    Framework("mxnet", "mxnet", "mxnet", "recordio"),
    Framework("cntk", "cntk", "cntk", "cntk"),
    Framework("keras-tensorflow", "keras_api", "tensorflow", "lmdb"),
    Framework("keras-jax", "keras_api", "jax", "lmdb"),
    Framework("keras-torch", "keras_api", "pytorch", "lmdb"),
)}
FRAMEWORKS = tuple(REGISTRY)
ENVIRONMENTS = {name: framework.environment for name, framework in REGISTRY.items()}


def registry_table() -> str:
    """The registry as README's Markdown table."""
    rows = ["| framework | backend module | environment | data format | over processes |", "|---|---|---|---|---|"]
    rows += [f"| `{f.name}` | `backends/{f.module}.py` | `{f.environment}` | `{f.data_format}` | "
             f"{'yes' if f.over_processes else 'no'} |" for f in REGISTRY.values()]
    return "\n".join(rows)


def load(framework: str) -> ModuleType:
    if framework not in REGISTRY:
        raise KeyError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    if framework.startswith("keras-"):
        os.environ["KERAS_BACKEND"] = framework.removeprefix("keras-")  # read when Keras is imported
    try:
        return importlib.import_module(f"{__name__}.{REGISTRY[framework].module}")
    except ImportError as error:
        raise Unavailable(f"{framework} cannot be imported: {error}") from error


def already_finished() -> None:
    """What ``step()`` returns when the step ran eagerly and had finished by the time it returned."""


def describe(backend: ModuleType) -> dict:
    """The framework version, Python and package versions that the run's record keeps."""
    if hasattr(backend, "describe"):  # the framework runs in a worker under another interpreter
        return backend.describe()
    return {"framework_version": backend.framework_version(), "python": platform.python_version(),
            "packages": package_versions(backend.PACKAGES)}


def package_versions(names: tuple[str, ...]) -> dict:
    """Installed versions by distribution name; None for one not installed (tensorflow-cpu vs tensorflow)."""
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found
