"""Run by tests/test_backends.py in Caffe's venv (a CPU_ONLY build): a GPU run must come out
unavailable, where Caffe itself would abort the process on first GPU use."""
import json

from dlbench.backends import Unavailable
from dlbench.backends.caffe import Trainer
from dlbench.networks import network
from dlbench.spec import RunSpec

try:
    Trainer(RunSpec("caffe", "mnist-synthetic", "lenet", "gpu1", 1, 8, 2, 1, 0.01, 2), network("lenet", "mnist"))
    print(json.dumps({"unavailable": None}))
except Unavailable as reason:
    print(json.dumps({"unavailable": str(reason)}))
