"""Run by tests/unit/backends/test_backends.py in MXNet's environment: LeNet's steps on the resident batch under the
timed loop, clocked by the engine's stamps; then a stamp behind an operation that fails, whose wait must raise
the failure rather than wait for a stamp the engine never takes. Prints what it saw as JSON."""
import faulthandler
import json

import mxnet as mx
from dlbench import networks
from dlbench.backends.mxnet import Harness, StepStamps
from dlbench.spec import RunSpec
from dlbench.tasks.loop import timed_loop

faulthandler.dump_traceback_later(120, exit=True)  # a wait that never returns fails the test, not the suite
spec = RunSpec("mxnet", "mnist-synthetic", "lenet", "cpu", 1, 32, 40, 5, 0.01, 2)
harness = Harness(spec, networks.network("lenet", "mnist"))
timed = timed_loop(harness, spec.iterations, spec.warmup_iterations, progress=lambda *_, **__: None)
result = {"steps": len(timed["iteration_seconds"]), "shortest": min(timed["iteration_seconds"]),
          "step_completion": timed["step_completion"], "window": timed["timed_window"]["seconds"],
          "timed_sum": sum(timed["iteration_seconds"][spec.warmup_iterations:])}

weights = mx.nd.ones((4,))
stamps = StepStamps([weights])
result["stamp_before_the_failure"] = stamps.push()() > 0
# take with mode="raise" fails in its kernel, on the engine's thread, after the call has returned
weights[:] = mx.nd.take(mx.nd.ones((3, 1)), mx.nd.array([7]), mode="raise").reshape((1,)).broadcast_to((4,))
try:
    stamps.push()()
    result["failed_step"] = "stamped"
except mx.base.MXNetError as error:
    result["failed_step"] = f"raised: {str(error).strip().splitlines()[0]}"
print(json.dumps(result))
