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
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType


class Unavailable(RuntimeError):
    """The run cannot take place on this machine (framework missing, too few GPUs, ...)."""


# The thesis's five frameworks, then Keras 3's high-level API on three backends (seed 001's
# keras-mxnet comparison in its modern form); each framework's backend module.
FRAMEWORKS = ("caffe", "tensorflow", "pytorch", "mxnet", "cntk", "keras-tensorflow", "keras-jax", "keras-torch")
MODULES = {**{framework: f"dlbench.backends.{framework}" for framework in FRAMEWORKS[:5]},
           **{f"keras-{backend}": "dlbench.backends.keras_api" for backend in ("tensorflow", "jax", "torch")}}
# The environment (envs/<name>.*, .venvs/<name>) each framework runs in: Keras shares its backend's.
ENVIRONMENTS = {**{framework: framework for framework in FRAMEWORKS},
                "keras-tensorflow": "tensorflow", "keras-jax": "jax", "keras-torch": "pytorch"}


def load(framework: str) -> ModuleType:
    if framework not in FRAMEWORKS:
        raise KeyError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    if framework.startswith("keras-"):
        os.environ["KERAS_BACKEND"] = framework.removeprefix("keras-")  # read when Keras is imported
    try:
        return importlib.import_module(MODULES[framework])
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
