"""The GPU acceptance check's verdicts, on records of a fake GPU node read back through the record schema:
numbers that hold pass, numbers that cannot be true FAIL, and on a machine without a GPU every check says
it is unavailable."""
import os
import subprocess
import sys

import pandas as pd
import pytest
from dlbench.checks import acceptance
from dlbench.record.io import load_records, write_record

from ...conftest import ROOT
from ..tables.test_tables import record


def gpu_record(framework="pytorch", dataset="mnist-synthetic", speed=1000.0, mfu=0.4, allocator=500.0,
               process=900.0, device_memory=2000.0, energy_j=300.0, mean_w=200.0, timed_s=1.5, **changes):
    found = record(framework=framework, device="gpu1", speed=speed, **changes)
    found["run"].update(dataset=dataset, data_mode=dataset.partition("-")[2] or "real")
    found["timing"]["timed_seconds"] = timed_s
    found["memory"].update(framework_allocator_peak_mib=allocator, gpu_process_peak_mib=process,
                           gpu_device_peak_mib=device_memory, reasons={})
    found["power"].update(gpu_mean_w=mean_w, gpu_peak_w=mean_w * 1.2, gpu_energy_j=energy_j,
                          energy_per_image_j=energy_j / 1000, method="energy counter", reasons={})
    found["compute"].update(mfu=mfu, achieved_tflops=mfu * 50, ceiling_tflops=50.0)
    return found


def read_back(tmp_path, records) -> list[dict]:
    """Through the files and the schema, as the check reads a node's records."""
    paths = []
    for number, item in enumerate(records):
        write_record(item, tmp_path / f"rep{number}.json")
        paths.append(tmp_path / f"rep{number}.json")
    return load_records(paths)


def test_numbers_that_hold_pass_every_check(tmp_path):
    records = read_back(tmp_path, [gpu_record(), gpu_record(dataset="mnist-generated", speed=980.0),
                                   gpu_record(framework="keras-jax", process=700.0)])
    found = acceptance.verdicts(records, {"device": "GPU", "fp32_error": 2e-7, "tf32_error": 4e-4})
    assert {verdict.check for verdict in found} == {*acceptance.RECORD_CHECKS, acceptance.TF32_CHECK,
                                                     acceptance.HARNESS_CHECK}
    (harness,) = [v for v in found if v.verdict != "pass"]  # no make bench table given
    assert harness.check == acceptance.HARNESS_CHECK and harness.verdict.startswith("unavailable: not measured")
    ratio = next(v for v in found if v.check == "real ÷ synthetic")
    assert ratio.value == pytest.approx(0.98) and ratio.cell == "pytorch lenet mnist gpu1 fp32"


@pytest.mark.parametrize("bad, check", [
    (gpu_record(mfu=1.3), "MFU ≤ 1"),
    (gpu_record(allocator=1200.0), "allocator ≤ process ≤ device memory"),
    (gpu_record(process=2500.0), "allocator ≤ process ≤ device memory"),
    (gpu_record(energy_j=400.0), "energy counter ÷ (mean power × time)"),
    (gpu_record(dataset="mnist-generated", speed=500.0), "real ÷ synthetic"),
    (gpu_record(framework="keras-jax", process=3000.0, device_memory=60000.0), "keras-jax LeNet process memory"),
])
def test_a_number_that_cannot_be_true_fails_its_check(tmp_path, bad, check):
    found = acceptance.verdicts(read_back(tmp_path, [gpu_record(), bad]), None)
    failed = [v for v in found if v.verdict == "FAIL"]
    assert [v.check for v in failed] == [check]
    assert "FAIL" in acceptance.table(found)


def test_tf32_must_be_off_in_fp32_and_its_switch_must_switch():
    assert acceptance.tf32_verdict({"device": "GPU", "fp32_error": 2e-7, "tf32_error": 4e-4}).verdict == "pass"
    assert acceptance.tf32_verdict({"device": "GPU", "fp32_error": 4e-4, "tf32_error": 4e-4}).verdict == "FAIL"
    assert acceptance.tf32_verdict({"device": "GPU", "fp32_error": 2e-7, "tf32_error": 2e-7}).verdict == "FAIL"


def test_a_check_with_no_run_to_judge_says_so_and_each_run_that_did_not_run_is_named(tmp_path):
    """A failed run is the run check's FAIL; a framework whose build has no kernels for the GPU (MXNet's on an H100)
    is its unavailable row with the reason; the checks of numbers have nothing to judge and say so."""
    failed = gpu_record(status="failed", reason="CUDA error")
    refused = gpu_record(framework="mxnet", status="unavailable", reason=(
        "MXNet 1.9.1 (CUDA 11.7) has kernels for sm_50…sm_86; this GPU (NVIDIA H100 80GB HBM3) is sm_90, which it has "
        "no kernels for\nmore lines"))
    found = acceptance.verdicts(read_back(tmp_path, [failed, refused]), None)
    runs = [v for v in found if v.check == acceptance.RUN_CHECK]
    said = "MXNet 1.9.1 (CUDA 11.7) has kernels for sm_50…sm_86; this GPU (NVIDIA H100 80GB HBM3) is sm_90, which it"
    assert [v.verdict for v in runs] == ["FAIL", f"unavailable: {said} has no kernels for"]
    assert runs[1].cell.startswith("mxnet lenet")
    assert all(v.verdict.startswith("unavailable: ") for v in found if v.check != acceptance.RUN_CHECK)


def test_without_a_gpu_every_verdict_is_unavailable(tmp_path):
    """make gpu-check on a node without a GPU driver (an NVML that says so, whatever this node has): nothing runs,
    and it says why."""
    (tmp_path / "pynvml.py").write_text("class NVMLError(Exception):\n    pass\n\n\n"
                                        "def nvmlInit():\n    raise NVMLError('Driver Not Loaded')\n")
    node = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, str(ROOT / "workflow" / "scripts" / "gpu_check.py"), "--directory",
                           str(tmp_path / "gpu-check")], capture_output=True, text=True, check=False, timeout=120,
                          env=node)
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if line.startswith("| ") and "verdict" not in line]
    assert len(rows) == len(acceptance.RECORD_CHECKS) + 2
    assert all("unavailable: no GPU (NVML: Driver Not Loaded)" in row for row in rows), rows
    assert (tmp_path / "gpu-check" / "gpu-check.md").read_text().startswith("GPU acceptance check: no GPU")
    assert not (tmp_path / "gpu-check" / "results").exists()


def test_the_harness_s_cost_is_make_bench_s_measurement_on_a_gpu(tmp_path):
    """Its rows of a CUDA case with a goal, each judged as make bench judged it; CPU rows and the splits without a
    goal are not the GPU's."""
    lenet, resnet = "lenet/mnist, batch 64, cuda, 4 threads", "resnet50/cifar10, batch 128, cuda, 4 threads"
    rows = [{"framework": "pytorch", "case": lenet, "median": 0.991, "goal": ">= 0.98", "goal_met": "met"},
            {"framework": "pytorch", "case": resnet, "median": 0.95, "goal": ">= 0.98", "goal_met": "missed"},
            {"framework": "pytorch", "case": lenet, "median": 0.97, "goal": None, "goal_met": None},
            {"framework": "mxnet", "case": "lenet/mnist, batch 64, cpu, 2 threads", "median": 0.99, "goal": ">= 0.98",
             "goal_met": "cannot tell (unsteady)"}]
    rows = [{"benchmark": "framework_overhead", **row} for row in rows]
    pd.DataFrame(rows).to_csv(tmp_path / "benchmarks.csv", index=False)
    found = acceptance.harness_verdicts(tmp_path / "benchmarks.csv")
    assert [(v.cell, v.value, v.verdict) for v in found] == [
        (f"pytorch {lenet}", 0.991, "pass"), (f"pytorch {resnet}", 0.95, "FAIL")]
    assert acceptance.harness_verdicts(tmp_path / "none.csv")[0].verdict.startswith("unavailable: not measured")
