"""Run by tests/unit/backends/test_backends.py in Caffe's venv (a CPU_ONLY build whose pycaffe has no parallel
solver): GPU runs must come out unavailable, where Caffe itself would abort the process on first
GPU use."""
import json

from dlbench.backends import Unavailable
from dlbench.backends.caffe import Harness
from dlbench.networks import network
from dlbench.spec import RunSpec

reasons = {}
for device in ("gpu1", "gpu2"):
    try:
        Harness(RunSpec("caffe", "mnist-synthetic", "lenet", device, 1, 8, 2, 1, 0.01, 2), network("lenet", "mnist"))
        reasons[device] = None
    except Unavailable as reason:
        reasons[device] = str(reason)
print(json.dumps(reasons))
