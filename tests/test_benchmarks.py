"""Every benchmark runs (a smoke run at tiny sizes, seconds each), so that a change of the package's API that
breaks one fails here: the numbers of such tiny runs mean nothing, and `make bench` is where they are measured.
The frameworks in venvs of their own (TensorFlow, MXNet, Caffe) are left to the benchmarks' own runs."""
import json
import subprocess
import sys

import pytest

from .conftest import ROOT

SMOKE = {
    "framework_overhead.py": ["--network", "lenet", "--variant", "mnist", "--batch", "8", "--warmup", "1",
                              "--timed", "2", "--rounds", "1"],
    "format_throughput.py": ["--family", "cifar10", "--family", "imagenet", "--images", "20"],
    "input_pipeline.py": ["--family", "mnist", "--images", "64", "--batch", "8", "--warmup", "1", "--timed", "2",
                          "--rounds", "1"],
    "memory_format.py": ["--network", "lenet", "--family", "mnist", "--batch", "8", "--warmup", "1", "--timed", "2",
                         "--rounds", "1", "--precisions", "fp32"],
}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(SMOKE))
def test_every_benchmark_runs(script, tmp_path):
    extra = ["--dir", str(tmp_path)] if script == "format_throughput.py" else []
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *SMOKE[script], *extra],
                          capture_output=True, text=True, check=False, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    last = done.stdout.strip().splitlines()[-1]
    assert json.loads(last.split(" ", 1)[1] if script == "memory_format.py" else last), last
    assert sorted(benchmark.name for benchmark in (ROOT / "benchmarks").glob("*.py")) == sorted(SMOKE)
