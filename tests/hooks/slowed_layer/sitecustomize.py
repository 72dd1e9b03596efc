"""One description layer of a PyTorch profile made slower by a known interval: while the profiler's layer scopes are
open, the forward call of the layer ``DLBENCH_TEST_SLOW_LAYER`` sleeps ``DLBENCH_TEST_LAYER_SLEEP_S`` seconds inside
its scope (a pre-hook registered after the scope's own), so that its forward takes at least that long on the true
clock (tests/unit/tasks/test_profile.py). PYTHONPATH: this directory and its parent."""
import contextlib
import os
import time

from after_import import after_import

LAYER, SLEEP_S = os.environ["DLBENCH_TEST_SLOW_LAYER"], float(os.environ["DLBENCH_TEST_LAYER_SLEEP_S"])


def slowed(module):
    scopes = module.module_scopes

    @contextlib.contextmanager
    def slowed_scopes(modules):
        with scopes(modules):
            handle = modules[LAYER].register_forward_pre_hook(lambda *arguments: time.sleep(SLEEP_S))
            try:
                yield
            finally:
                handle.remove()

    module.module_scopes = slowed_scopes


after_import("dlbench.backends.pytorch", slowed)
