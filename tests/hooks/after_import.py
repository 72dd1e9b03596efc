"""A change made to a module as soon as it is imported, in any process whose PYTHONPATH has this directory: how the
tests' sitecustomize files reach into a run's own process (the fake GPU node's torch build, slowed steps)."""
import importlib.abc
import importlib.machinery
import sys


def after_import(name, change):
    """``change(module)`` once ``name`` is loaded (at once if it is already): a finder that loads it as the real
    ones do, then changes it."""
    if name in sys.modules:
        change(sys.modules[name])
        return

    class Changed(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname != name:
                return None
            spec = importlib.machinery.PathFinder.find_spec(fullname, path)
            if spec is not None:
                load = spec.loader.exec_module

                def exec_module(module):
                    load(module)
                    change(module)

                spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Changed())
