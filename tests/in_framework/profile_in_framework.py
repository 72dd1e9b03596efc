"""Run by tests/unit/tasks/test_profile.py inside a framework's environment: a profile run of a network (AlexNet unless
named) on CIFAR10-shaped synthetic batches (the runner's timed steps, then the profiled ones); print the
runner's result as JSON, or the reason the framework cannot profile it."""
import json
import sys

from dlbench import backends, datasets
from dlbench.spec import RunSpec
from dlbench.tasks import profile

framework, network = (*sys.argv[1:], "alexnet")[:2]
spec = RunSpec(framework, "cifar10-synthetic", network, "cpu", 1, 8, 6, 2, 0.01, 2, task="profile")
try:
    harness = backends.load(framework).Harness(spec, datasets.description(network, "cifar10"))
except backends.Unavailable as error:
    print(json.dumps({"unavailable": str(error)}))
else:
    print(json.dumps(profile.run(harness, spec, progress=lambda *args, **kwargs: None)))
