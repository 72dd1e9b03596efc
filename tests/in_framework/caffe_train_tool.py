"""Run by tests/unit/backends/test_backends.py in Caffe's venv: multi-GPU Caffe's path, ``caffe train`` in a child
process (TrainTool), taken on this CPU: the command a two-GPU run gives, the loop's steps following the iterations the
tool logs, its loss, its process gone once the harness closes, and why a tool that fails failed."""
import json
import sys
from pathlib import Path

from dlbench.backends import caffe as backend
from dlbench.networks import network
from dlbench.spec import RunSpec
from dlbench.tasks.loop import timed_loop

spec = RunSpec("caffe", "mnist-generated", "lenet", "cpu", 1, 32, 30, 2, 0.01, 2, data_dir=sys.argv[1])
harness = backend.Harness(spec, network("lenet", "mnist"), train_tool=True)
result = {"command": harness.tool.command[1:],
          "two_gpus": backend.TrainTool.command_for(Path("solver.prototxt"), 2)[1:]}
harness.step()()
result["first_loss"] = harness.final_loss()
timed = timed_loop(harness, spec.iterations - 1, spec.warmup_iterations, progress=lambda *_, **__: None)
result["timed_steps"], result["last_loss"] = len(timed["iteration_seconds"]), harness.final_loss()
process = harness.tool.process
harness.close()
result["exit_code"] = process.poll()
try:
    backend.TrainTool(Path(sys.argv[1]) / "no-such-solver.prototxt", 0)
except RuntimeError as error:
    result["failed"] = str(error)
print(json.dumps(result))
