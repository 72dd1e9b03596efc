"""The precision and compile axes end to end (.test/config-numerics): a workflow run of their own, in a file of its own
so that a second test worker runs it beside the tiny config's (tests/conftest.py)."""
import json
import shutil
import statistics
from pathlib import Path

import jsonschema
import pytest
from dlbench import envs

from ..conftest import ROOT
from .test_workflow import snakemake

# oneDNN's avx512_core (AVX-512 F, BW, VL and DQ): the CPUs on which MXNet's oneDNN 2.x has bf16 kernels
AVX512_CORE = {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= set(
    next((line.split(":", 1)[1].split() for line in Path("/proc/cpuinfo").read_text().splitlines()
          if line.startswith("flags")), []))


@pytest.mark.slow
def test_precision_and_compile_are_axes_of_the_benchmark(tmp_path, record_schema):
    """fp32 and bf16, eager and compiled, in PyTorch, TensorFlow and MXNet on CPU: every record states
    its numerics, and the appendix puts a cell's four variants side by side."""
    shutil.copy(ROOT / ".test" / "config-numerics" / "config.yaml", tmp_path / "config.yaml")
    snakemake(tmp_path)
    for environment in ("pytorch", "tensorflow", "mxnet"):  # the builds this node's GPUs call for
        built = json.loads((tmp_path / ".venvs" / environment / "environment.json").read_text())
        requirements, choice = envs.choose_requirements(ROOT / "envs" / f"{environment}.requirements.txt",
                                                        envs.node_gpus(), envs.node_compute_capabilities(),
                                                        envs.node_driver())
        assert (built["requirements"], built["choice"]) == (requirements.name, choice)
        # asked of the framework: a CPU build from the CPU file, a CUDA one from a CUDA file
        assert (built["framework_build"] == "cpu") == (requirements.name == f"{environment}.requirements.txt")
    compilers = {"pytorch": "torch.compile", "tensorflow": "XLA (tf.function jit_compile)"}
    always = {"pytorch": None, "tensorflow": "tf.function graph", "mxnet": "Gluon hybridize (static graph)"}
    for framework in ("pytorch", "tensorflow", "mxnet"):
        for precision in ("fp32", "bf16"):
            for compiled in (False, True):
                variant = precision + ("-compiled" if compiled else "")
                runs = tmp_path / "results" / "runs" / framework / "mnist-synthetic" / "lenet"
                path = runs / "cpu" / variant / "train"

                record = json.loads((path / "rep1.json").read_text())
                jsonschema.validate(record, record_schema)
                assert (record["run"]["precision"], record["run"]["compile"]) == (precision, compiled)
                if framework == "mxnet" and compiled:
                    assert (record["status"], record["reason"]) == ("unavailable", (
                        "compile: mxnet always compiles (Gluon hybridize (static graph)): its runs without "
                        "compile are compiled"))
                    continue
                if framework == "mxnet" and precision == "bf16" and not AVX512_CORE:
                    assert record["status"] == "unavailable" and record["reason"].startswith(
                        "bf16 on cpu: MXNet 1.9.1's oneDNN has no bf16 kernels for this CPU"), record["reason"]
                    continue
                assert record["status"] == "ok", record["reason"]
                execution = record["execution"]
                assert execution["tf32"] is False and execution["loss_scaling"] is False
                assert execution["compute_dtype"] == {"fp32": "float32", "bf16": "bfloat16"}[precision]
                assert execution["compiler"] == (compilers[framework] if compiled else always[framework])
                if framework == "pytorch" and compiled:  # torch.compile compiles in the first step
                    timing = record["timing"]
                    assert timing["first_step_seconds"] > 10 * statistics.median(timing["iteration_seconds"][5:])
    header = next(line for line in (tmp_path / "results" / "tables" / "appendix.md").read_text().splitlines()
                  if line.startswith("|"))
    assert [name.strip() for name in header.strip("|").split("|")][-4:] == [
        "cpu fp32", "cpu fp32-compiled", "cpu bf16", "cpu bf16-compiled"]
