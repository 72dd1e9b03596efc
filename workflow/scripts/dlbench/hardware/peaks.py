"""The hardware's peak dense FLOP rate, from its maker's numbers: what MFU divides the achieved rate by.

GPUs: the datasheet's dense rate (without 2:4 sparsity, which doubles the tensor-core figures NVIDIA
headlines) of each model NVML names, per precision. CPUs: cores × clock × FLOP per cycle and core, where
the core's FLOP per cycle follows from its microarchitecture (its FMA units' number and width) and the
node reports its highest clock. Where dlbench does not know a number, the peak is None with the reason:
never a guess.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import psutil


class Peak(NamedTuple):
    tflops: float | None  # of one device (a GPU, or the run's cores)
    reason: str  # where the number comes from, or why there is none


# Dense TFLOP/s by precision (tf32: tensor cores on fp32 data; fp16/bf16: tensor cores where the GPU has them),
# from NVIDIA's datasheets; matched against NVML's name in order. A precision a GPU has no rate for is absent.
GPU_PEAKS = (
    (r"H100 80GB HBM3|H100 SXM|H200", "H100/H200 SXM", {"fp32": 67.0, "tf32": 494.5, "bf16": 989.5, "fp16": 989.5}),
    (r"H100 PCIe", "H100 PCIe", {"fp32": 51.0, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0}),
    (r"A100", "A100", {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}),
    (r"L4\b", "L4", {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0}),
    (r"T4\b", "T4", {"fp32": 8.1, "fp16": 65.0}),
    (r"V100-SXM2", "V100 SXM2", {"fp32": 15.7, "fp16": 125.0}),
    (r"V100-PCIE", "V100 PCIe", {"fp32": 14.0, "fp16": 112.0}),
    (r"P100-SXM2", "P100 SXM2", {"fp32": 10.6, "fp16": 21.2}),
    (r"P100-PCIE", "P100 PCIe", {"fp32": 9.3, "fp16": 18.7}),
    (r"K20m", "K20m", {"fp32": 3.52}),
    (r"K80", "K80 (one of the board's two GPUs: 8.73 / 2)", {"fp32": 4.365}),
)


def gpu_peak(name: str | None, precision: str) -> Peak:
    """One GPU's peak in ``precision``, by its NVML name."""
    if name is None:
        return Peak(None, "NVML gave no name for the GPU")
    for pattern, model, rates in GPU_PEAKS:
        if re.search(pattern, name):
            if precision not in rates:
                return Peak(None, f"the {model} datasheet gives no {precision} rate (no units for it)")
            return Peak(rates[precision], f"{model} datasheet, dense {precision}")
    return Peak(None, f"dlbench has no datasheet peak for a {name} (dlbench.hardware.peaks.GPU_PEAKS)")


class CpuFacts(NamedTuple):
    vendor: str  # cpuinfo's vendor_id
    family: int
    model: int
    max_mhz: float | None  # the highest clock the node reports, None where it reports none (many VMs)


# FP32 FLOP per cycle and core (FMA units × lanes × 2), by AMD family and model range: Zen 2, Zen 3 and Zen 4 have
# two 256-bit FMA pipes (Zen 4 runs AVX-512 on them in two halves). Left out: Zen 5, whose FMA pipes are 512 or 256
# bits wide by product line, and Intel's Xeons with AVX-512, which have one or two 512-bit FMA units by SKU: cpuinfo
# says neither.
CPU_FP32_FLOP_PER_CYCLE = (
    ("AuthenticAMD", 23, range(0x30, 0x100), "Zen 2", 32),
    ("AuthenticAMD", 25, range(0x10), "Zen 3", 32),
    ("AuthenticAMD", 25, range(0x10, 0x20), "Zen 4", 32),
    ("AuthenticAMD", 25, range(0x20, 0x60), "Zen 3", 32),
    ("AuthenticAMD", 25, range(0x60, 0x100), "Zen 4", 32),
)


def cpu_facts(cpuinfo: Path = Path("/proc/cpuinfo")) -> CpuFacts:
    """This node's CPU as cpuinfo and cpufreq report it."""
    fields = {}
    for line in cpuinfo.read_text().splitlines():
        if not line.strip():
            break  # the first processor's block
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    frequency = psutil.cpu_freq()
    return CpuFacts(fields.get("vendor_id", ""), int(fields.get("cpu family", -1)), int(fields.get("model", -1)),
                    frequency.max if frequency and frequency.max > 0 else None)


def cpu_peak(precision: str, cores: int, cpu: CpuFacts) -> Peak:
    """The peak of ``cores`` cores of ``cpu`` in ``precision``."""
    if precision != "fp32":
        return Peak(None, f"dlbench's CPU peaks are fp32 only, not {precision}")
    found = next(((name, flop) for vendor, family, models, name, flop in CPU_FP32_FLOP_PER_CYCLE
                  if (cpu.vendor, cpu.family) == (vendor, family) and cpu.model in models), None)
    if found is None:
        return Peak(None, f"dlbench does not know the FP32 FLOP per cycle of a {cpu.vendor} family {cpu.family} "
                          f"model {cpu.model} core (dlbench.hardware.peaks.CPU_FP32_FLOP_PER_CYCLE)")
    name, flop = found
    if cpu.max_mhz is None:
        return Peak(None, f"the node reports no highest clock for its {name} cores (no cpufreq: a virtual machine?)")
    return Peak(cores * cpu.max_mhz * 1e6 * flop / 1e12,
                f"{cores} {name} cores × {cpu.max_mhz:.0f} MHz (highest) × {flop} FP32 FLOP per cycle")


def device_peak(gpu_run: bool, gpus: list[dict], precision: str, cores: int) -> Peak:
    """The peak of one of a run's devices: the slowest of its GPUs (as NVML names them), or its ``cores``."""
    if not gpu_run:
        return cpu_peak(precision, cores, cpu_facts())
    if not gpus:
        return Peak(None, "NVML described none of the run's GPUs")
    return min((gpu_peak(gpu["name"], precision) for gpu in gpus), key=lambda peak: (peak.tflops is not None,
                                                                                   peak.tflops or 0.0))
