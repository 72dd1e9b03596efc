"""Each training step of PyTorch, TensorFlow and MXNet made slower by a known interval in the framework's own process:
every backend's ``Harness.step`` sleeps ``DLBENCH_TEST_STEP_SLEEP_S`` seconds before it dispatches its step, so that
a step takes at least that long on the true clock (tests/unit/run/test_known_step_time.py). PYTHONPATH: this
directory and its parent."""
import os
import time

from after_import import after_import

SLEEP_S = float(os.environ["DLBENCH_TEST_STEP_SLEEP_S"])


def slowed(module):
    step = module.Harness.step

    def slowed_step(self):
        time.sleep(SLEEP_S)
        return step(self)

    module.Harness.step = slowed_step


for framework in ("pytorch", "tensorflow", "mxnet"):
    after_import(f"dlbench.backends.{framework}", slowed)
