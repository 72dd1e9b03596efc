"""Framework backends behind one interface.

A backend module defines ``framework_version()``, ``packages()`` and ``trainer(spec, network)``
returning an object with ``step()``, ``synchronize()``, ``final_loss()`` and
``allocator_peak_mib()``. Modules are imported lazily, inside the framework's own environment,
so the package itself imports with no framework installed.
"""
from __future__ import annotations

import importlib
from types import ModuleType


class Unavailable(RuntimeError):
    """The run cannot take place on this machine (framework missing, too few GPUs, ...)."""


IMPLEMENTED = {"pytorch": "dlbench.backends.pytorch"}

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
