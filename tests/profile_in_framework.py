"""Run by tests/test_profile.py inside a framework's environment: a profile run of AlexNet on CIFAR10-shaped
synthetic batches (the runner's timed steps, then the profiled ones); print the runner's result as JSON."""
import json
import sys

from dlbench import backends, datasets, runner
from dlbench.spec import RunSpec

framework = sys.argv[1]
spec = RunSpec(framework, "cifar10-synthetic", "alexnet", "cpu", 1, 8, 6, 2, 0.01, 2, task="profile")
trainer = backends.load(framework).Trainer(spec, datasets.description("alexnet", "cifar10"))
print(json.dumps(runner.profile(trainer, spec, progress=lambda *args, **kwargs: None)))
