"""Achieved FLOP rate, MFU over the hardware's peak, and the share of the node's measured ceiling (and which runs
the ceiling is for)."""
import socket
import sys

import pytest
from dlbench.hardware import peaks
from dlbench.hardware.peaks import Peak
from dlbench.record import compute
from dlbench.run import ceiling
from dlbench.spec import RunSpec

from ..hardware.test_gpu import FakeNVML


def spec(device="cpu", network="resnet50", dataset="imagenet-synthetic"):
    return RunSpec(framework="pytorch", dataset=dataset, network=network, device=device, repetition=1,
                   batch_size_global=64, iterations=3, warmup_iterations=1, learning_rate=0.1, threads=2)


def measured_on(host, gpu=None, tflops=400.0):
    return {"node": {"host": host, "gpu": gpu}, "tflops": tflops, "reason": ""}


H100 = {"name": "NVIDIA H100 80GB HBM3", "driver": "580.1", "uuid": "GPU-a", "index": 0}
H100_FP32 = peaks.gpu_peak(H100["name"], "fp32")
UNKNOWN = Peak(None, "no peak here")


def test_mfu_is_over_the_peak_and_the_ceiling_fraction_over_the_ceiling_of_all_the_runs_gpus():
    # The H100 figures of the issue: ResNet50 b64 fp32 at 1,710 img/s is 41.6 TFLOP/s.
    block = compute.block(spec("gpu2"), 1710.0, measured_on("node1", H100, 50.0), "node1", [H100, H100], None,
                          H100_FP32)
    assert block["achieved_tflops"] == pytest.approx(41.55, abs=0.01)
    assert block["ceiling_tflops"] == 100.0 and block["peak_tflops"] == 134.0  # two GPUs
    assert block["ceiling_fraction"] == pytest.approx(0.4155, abs=1e-4)
    assert block["mfu"] == pytest.approx(41.55 / 134, abs=1e-4)
    assert block["reasons"] == {} and block["ceiling_flag"] is None


def test_a_run_that_beats_its_ceiling_is_flagged_with_by_how_much_and_which_kernel_the_ceiling_was():
    # The TensorFlow AlexNet/CIFAR10 on this project's CPU: 0.293 TFLOP/s over a ceiling of 0.212.
    ceiling = {**measured_on(socket.gethostname(), None, 0.212), "kernel": "torch.mm", "size": 1024}
    run = spec(network="alexnet", dataset="cifar10-synthetic")
    speed = 0.293e12 / compute.flops_per_image(run)
    block = compute.block(run, speed, ceiling, socket.gethostname(), [], None, UNKNOWN)
    assert block["ceiling_fraction"] == pytest.approx(1.382, abs=1e-3)
    assert block["ceiling_flag"] == ("0.293 TFLOP/s is 1.38 × the measured ceiling (torch.mm of 1024): the run's "
                                     "kernels outran every product the ceiling tried, or the network's FLOP count "
                                     "is off")
    assert block["mfu"] is None and block["reasons"] == {"peak_tflops": "no peak here", "mfu": "no peak here"}
    within = compute.block(run, speed / 1.4, ceiling, socket.gethostname(), [], None, UNKNOWN)
    assert within["ceiling_fraction"] < compute.BEATS_CEILING and within["ceiling_flag"] is None


@pytest.mark.parametrize("host,gpu,why", [
    ("node2", H100, "the ceiling was measured on node1, this run ran on node2"),
    ("node1", {**H100, "driver": "590.2"}, ("the ceiling was measured on node1's NVIDIA H100 80GB HBM3 (driver "
                                            "580.1), this run used a NVIDIA H100 80GB HBM3 (driver 590.2)")),
])
def test_a_ceiling_of_another_node_or_driver_gives_no_ceiling_fraction(host, gpu, why):
    block = compute.block(spec("gpu1"), 1710.0, measured_on("node1", H100), host, [gpu], None, H100_FP32)
    assert block["achieved_tflops"] > 0 and block["ceiling_fraction"] is None and block["ceiling_tflops"] is None
    assert block["reasons"] == {"ceiling_tflops": why, "ceiling_fraction": why} and block["mfu"] > 0


def test_a_failed_run_has_flops_per_image_and_says_why_it_has_no_rate():
    block = compute.block(spec(), None, measured_on(socket.gethostname()), socket.gethostname(), [],
                          "see the run's reason (failed)", UNKNOWN)
    assert block["flops_per_image"] == 24_299_077_632 and block["ceiling_tflops"] == 400.0
    failed = "see the run's reason (failed)"
    assert block["reasons"] == {"achieved_tflops": failed, "ceiling_fraction": failed, "peak_tflops": "no peak here",
                                "mfu": failed}


def test_processes_on_one_machine_share_its_cpu_ceiling():
    assert compute.ceiling_devices(spec("2xcpu")) == 1 and compute.ceiling_devices(spec("2xgpu1")) == 2


@pytest.mark.slow  # six kernels measured on a real core, 10 s: the GPU ceiling's refusals stay fast
def test_the_cpu_ceiling_is_measured_on_the_held_cores(tmp_path):
    with open(tmp_path / "ceiling.log", "w") as log:
        found = ceiling.measure("cpu", "fp32", sys.executable, 1, log, tmp_path / "locks", None)
    assert found["reason"] == "" and found["threads"] == 1
    assert 0.001 < found["tflops"] < 10
    tried = {(kernel["kernel"], kernel["size"]): kernel["tflops"] for kernel in found["kernels"]}
    assert set(tried) == {(kernel, size) for kernel in ("torch.mm", "conv2d 1x1") for size in (512, 1024, 2048)}
    assert found["tflops"] == tried[found["kernel"], found["size"]] == max(tried.values())
    assert found["node"]["host"] == socket.gethostname() and found["node"]["gpu"] is None


def test_a_gpu_ceiling_without_a_usable_gpu_says_why(tmp_path):
    """NVML lists a GPU (a fake) that this machine's PyTorch cannot use: null, with the log's pointer."""
    with open(tmp_path / "ceiling.log", "w") as log:
        found = ceiling.measure("gpu", "bf16", sys.executable, 1, log, tmp_path / "locks", None, nvml=FakeNVML())
    assert found["tflops"] is None and found["reason"].startswith("the matrix product exited with code 1")
    assert found["node"]["gpu"]["name"] == "Fake P100"
    assert "GPU-fake-0" in (tmp_path / "ceiling.log").read_text()


def test_a_node_with_fewer_gpus_has_no_gpu_ceiling(tmp_path):
    with open(tmp_path / "ceiling.log", "w") as log:
        found = ceiling.measure("gpu", "fp32", sys.executable, 1, log, tmp_path / "locks", None,
                                nvml=FakeNVML(watts=()))
    assert found["tflops"] is None and found["reason"] == "gpu needs 1 GPU(s); this node has 0"


@pytest.mark.parametrize("name,precision,tflops", [
    ("NVIDIA H100 80GB HBM3", "bf16", 989.5), ("NVIDIA H100 PCIe", "tf32", 378.0), ("NVIDIA H200", "fp32", 67.0),
    ("NVIDIA A100-SXM4-80GB", "tf32", 156.0), ("Tesla V100-SXM2-16GB", "fp16", 125.0),
    ("Tesla P100-PCIE-16GB", "fp32", 9.3), ("Tesla K20m", "fp32", 3.52)])
def test_gpu_peaks_are_the_datasheets_dense_rates(name, precision, tflops):
    assert peaks.gpu_peak(name, precision).tflops == tflops


def test_a_peak_dlbench_does_not_know_is_none_with_the_reason_never_a_guess():
    assert peaks.gpu_peak("Tesla V100-SXM2-16GB", "tf32") == Peak(None, "the V100 SXM2 datasheet gives no tf32 rate "
                                                                         "(no units for it)")
    assert peaks.gpu_peak("NVIDIA GeForce GTX 1080", "fp32").tflops is None
    zen3 = peaks.CpuFacts("AuthenticAMD", 25, 1, None)
    assert peaks.cpu_peak("fp32", 2, zen3).reason.startswith("the node reports no highest clock for its Zen 3 cores")
    assert peaks.cpu_peak("fp32", 2, peaks.CpuFacts("GenuineIntel", 6, 143, 3800.0)).tflops is None
    assert peaks.cpu_peak("bf16", 2, zen3).tflops is None


def test_a_cpu_peak_is_cores_times_highest_clock_times_flop_per_cycle():
    genoa = peaks.CpuFacts("AuthenticAMD", 25, 0x11, 3700.0)
    assert peaks.cpu_peak("fp32", 4, genoa) == Peak(4 * 3.7e9 * 32 / 1e12, "4 Zen 4 cores × 3700 MHz (highest) × "
                                                                            "32 FP32 FLOP per cycle")


def test_this_nodes_cpu_is_read_from_cpuinfo():
    facts = peaks.cpu_facts()
    assert facts.vendor and facts.family >= 0
    assert peaks.device_peak(True, [], "fp32", 2) == Peak(None, "NVML described none of the run's GPUs")
    assert peaks.device_peak(True, [H100, {**H100, "name": "Tesla K20m"}], "fp32", 2).tflops == 3.52  # the slowest
