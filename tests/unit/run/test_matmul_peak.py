"""The node's ceiling: the best dense matrix-product rate, with every kernel and size it tried, or why there is none."""
import json
import shutil
import subprocess

import pytest
from dlbench.run import matmul_peak

from ...conftest import ROOT


# bf16 the same path as fp32 in another dtype, 5 s of matrix products on two cores: the slow tier's
@pytest.mark.parametrize("precision,dtype", [("fp32", "float32"),
                                             pytest.param("bf16", "bfloat16", marks=pytest.mark.slow)])
def test_the_ceiling_is_the_best_window_of_every_kernel_and_size_tried(precision, dtype):
    found = matmul_peak.tflops(precision, "cpu", sizes=(64, 128))
    assert {(k["kernel"], k["size"]) for k in found["kernels"]} == {
        (kernel, n) for kernel in matmul_peak.KERNELS for n in (64, 128)}
    for kernel in found["kernels"]:
        assert len(kernel["window_tflops"]) == matmul_peak.WINDOWS and kernel["tflops"] == max(kernel["window_tflops"])
        assert all(rate > 0 for rate in kernel["window_tflops"])
    best = max(found["kernels"], key=lambda kernel: kernel["tflops"])
    assert (found["tflops"], found["kernel"], found["size"]) == (best["tflops"], best["kernel"], best["size"])
    assert found["dtype"] == dtype and found["tf32"] is False and found["framework"].startswith("torch ")


@pytest.mark.skipif(not shutil.which("python3"), reason="no system python3")
def test_without_pytorch_the_result_says_why_there_is_no_ceiling(tmp_path):
    """The module as the ceiling job starts it, under an interpreter that has no torch (the system's)."""
    if subprocess.run(["python3", "-c", "import torch"], capture_output=True, check=False).returncode == 0:
        pytest.skip("the system python3 has torch")
    result = tmp_path / "ceiling.json"
    subprocess.run(["python3", "-m", "dlbench.run.matmul_peak", "fp32", "cpu", str(result)], check=True, timeout=60,
                   cwd=ROOT / "workflow" / "scripts")
    found = json.loads(result.read_text())
    assert found["tflops"] is None and found["reason"].startswith("the ceiling is measured with PyTorch, which cannot")
