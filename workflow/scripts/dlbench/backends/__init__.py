"""Framework backends behind one interface.

A backend module defines ``framework_version()``, ``PACKAGES`` (the distributions whose versions
the record keeps), ``build(network)``, ``trainable_parameters(model)``, ``forward_shape(model,
images)`` and ``trainer(spec, network)`` returning an object with ``step()``, ``synchronize()``,
``final_loss()`` and ``allocator_peak_mib()``. Modules are imported lazily, inside the framework's own environment,
so the package itself imports with no framework installed.
"""
from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType


class Unavailable(RuntimeError):
    """The run cannot take place on this machine (framework missing, too few GPUs, ...)."""


IMPLEMENTED = {framework: f"dlbench.backends.{framework}" for framework in ("pytorch", "tensorflow", "mxnet")}

# The thesis's five frameworks keep their place in every table until their backend lands.
FRAMEWORKS = ("caffe", "tensorflow", "pytorch", "mxnet", "cntk")


def load(framework: str) -> ModuleType:
    if framework not in FRAMEWORKS:
        raise KeyError(f"unknown framework {framework!r}; known: {', '.join(FRAMEWORKS)}")
    if framework not in IMPLEMENTED:
        raise Unavailable("not implemented")
    try:
        return importlib.import_module(IMPLEMENTED[framework])
    except ImportError as error:
        raise Unavailable(f"{framework} cannot be imported: {error}") from error


def package_versions(names: tuple[str, ...]) -> dict:
    """Installed versions by distribution name; None for one not installed (tensorflow-cpu vs tensorflow)."""
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found
