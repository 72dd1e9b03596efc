"""The GPU acceptance check (``make gpu-check``): what a reviewer asks of a GPU node's numbers, as verdicts.

Each check reads the run records of ``.test/config-gpu-check`` (and :func:`tf32_probe`'s result) and gives a
row per cell it applies to: the measured value, its bound, and ``pass``, ``FAIL``, or ``unavailable: <why>``
where nothing could be measured: on a machine without a GPU, every check. A value that cannot be true (an MFU
above 1, a process using more GPU memory than the device) is a FAIL, never a figure.
"""
from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..spec import gpu_count
from ..tables import markdown_table

REAL_OVER_SYNTHETIC = 0.95  # the input pipeline keeps up: real data at least 95 % of synthetic's speed
ENERGY_AGREEMENT = 0.10  # NVML's energy counter within 10 % of mean power x the timed window
JAX_LENET_MIB = 2048  # keras-jax's LeNet without XLA's preallocation of 75 % of the GPU
TF32_ERROR_FP32 = 1e-4  # relative error of an fp32 product against float64's: fp32 math is ~1e-6, TF32's ~1e-3


@dataclass(frozen=True)
class Verdict:
    check: str
    cell: str
    value: float | None
    bound: str
    verdict: str  # pass | FAIL | unavailable: <why>


def _judged(check: str, cell: str, value: float, bound: str, holds: bool) -> Verdict:
    return Verdict(check, cell, value, bound, "pass" if holds else "FAIL")


def _cell(record: dict) -> str:
    run = record["run"]
    return (f"{run['framework']} {run['network']} {run['dataset']} {run['device']} {run['precision']}"
            f"{' compiled' if run['compile'] else ''} {run['task']}")


def _gpu_runs(records: list[dict]) -> list[dict]:
    return [r for r in records if r["status"] == "ok" and gpu_count(r["run"]["device"])]


def real_over_synthetic(records: list[dict]) -> list[Verdict]:
    """Training speed on stored data over synthetic data's, the same network, device and variant."""
    speeds: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for record in _gpu_runs(records):
        run = record["run"]
        if run["task"] == "train":
            family, _, mode = run["dataset"].partition("-")
            key = (run["framework"], run["network"], family, run["device"], run["precision"], run["compile"])
            speeds[key]["synthetic" if mode == "synthetic" else "stored"].append(
                record["timing"]["images_per_second_mean"])
    found = []
    for (framework, network, family, device, precision, compiled), by_mode in sorted(speeds.items()):
        if by_mode["stored"] and by_mode["synthetic"]:
            ratio = (sum(by_mode["stored"]) / len(by_mode["stored"])) / (
                sum(by_mode["synthetic"]) / len(by_mode["synthetic"]))
            cell = f"{framework} {network} {family} {device} {precision}{' compiled' if compiled else ''}"
            found.append(_judged("real ÷ synthetic", cell, ratio, f"≥ {REAL_OVER_SYNTHETIC}",
                                 ratio >= REAL_OVER_SYNTHETIC))
    return found


def mfu_at_most_one(records: list[dict]) -> list[Verdict]:
    """Model FLOPs utilisation against the node's measured matmul peak: above 1 cannot be."""
    return [_judged("MFU ≤ 1", _cell(r), r["compute"]["mfu"], "≤ 1", r["compute"]["mfu"] <= 1)
            for r in _gpu_runs(records) if r["compute"]["mfu"] is not None]


def energy_counter_agrees(records: list[dict]) -> list[Verdict]:
    """NVML's energy counter over the timed window against the sampled mean power times the window."""
    found = []
    for record in _gpu_runs(records):
        power, seconds = record["power"], record["timing"].get("timed_seconds")
        if power.get("method") == "energy counter" and power["gpu_mean_w"] and seconds:
            ratio = power["gpu_energy_j"] / (power["gpu_mean_w"] * seconds)
            found.append(_judged("energy counter ÷ (mean power × time)", _cell(record), ratio,
                                 f"1 ± {ENERGY_AGREEMENT}", abs(ratio - 1) <= ENERGY_AGREEMENT))
    return found


def memory_in_order(records: list[dict]) -> list[Verdict]:
    """The framework allocator's peak within the process's GPU memory, the process's within the device's."""
    found = []
    for record in _gpu_runs(records):
        memory = record["memory"]
        chain = [memory[key] for key in ("framework_allocator_peak_mib", "gpu_process_peak_mib", "gpu_device_peak_mib")
                 if memory[key] is not None]
        if len(chain) >= 2:
            found.append(_judged("allocator ≤ process ≤ device memory", _cell(record), chain[-1],
                                 " ≤ ".join(f"{value:,.0f}" for value in chain) + " MiB",
                                 all(a <= b for a, b in itertools.pairwise(chain))))
    return found


def jax_lenet_memory(records: list[dict]) -> list[Verdict]:
    """keras-jax's LeNet in its process's GPU memory: without XLA's preallocation, far under 2 GB."""
    return [_judged("keras-jax LeNet process memory", _cell(r), r["memory"]["gpu_process_peak_mib"],
                    f"< {JAX_LENET_MIB} MiB", r["memory"]["gpu_process_peak_mib"] < JAX_LENET_MIB)
            for r in _gpu_runs(records)
            if r["run"]["framework"] == "keras-jax" and r["run"]["network"] == "lenet"
            and r["memory"]["gpu_process_peak_mib"] is not None]


def each_gpu_run(records: list[dict]) -> list[Verdict]:
    """Every GPU cell's run: ok, or unavailable with its reason (a framework without a CUDA build here, a GPU its
    build has no kernels for), or failed."""
    found = []
    for record in records:
        if gpu_count(record["run"]["device"]):
            said = {"ok": "pass", "failed": "FAIL"}.get(record["status"]) or \
                f"unavailable: {record['reason'].splitlines()[0]}"
            found.append(Verdict(RUN_CHECK, _cell(record), None, "ok", said))
    return found


RUN_CHECK = "the run"
RECORD_CHECKS: dict[str, Callable[[list[dict]], list[Verdict]]] = {
    RUN_CHECK: each_gpu_run,
    "real ÷ synthetic": real_over_synthetic,
    "MFU ≤ 1": mfu_at_most_one,
    "energy counter ÷ (mean power × time)": energy_counter_agrees,
    "allocator ≤ process ≤ device memory": memory_in_order,
    "keras-jax LeNet process memory": jax_lenet_memory,
}
TF32_CHECK = "TF32 off in fp32"
HARNESS_CHECK = "harness ÷ bare loop"
BENCHMARKS = "results/benchmarks.csv"  # make bench's table, in the checkout


def harness_verdicts(benchmarks: Path | None) -> list[Verdict]:
    """The harness's cost on a GPU as ``make bench DEVICE=cuda`` measured it (``benchmarks``, its table: the
    framework_overhead rows of a CUDA case that have a goal), a row each; else one row saying it is not measured."""
    if benchmarks is not None and benchmarks.exists():
        table = pd.read_csv(benchmarks)
        rows = table[(table["benchmark"] == "framework_overhead") & table["goal"].notna()
                     & table["case"].str.contains(", cuda,", regex=False)]
        found = [Verdict(HARNESS_CHECK, f"{row.framework} {row.case}", row.median, row.goal,
                         {"met": "pass", "missed": "FAIL"}.get(row.goal_met, f"unavailable: {row.goal_met}"))
                 for row in rows.itertuples()]
        if found:
            return found
    return [Verdict(HARNESS_CHECK, "", None, ">= 0.98", "unavailable: not measured on a GPU here (make bench "
                                                         f"DEVICE=cuda writes it to {benchmarks or BENCHMARKS})")]


def tf32_probe(size: int = 2048) -> dict:
    """The relative error of one fp32 product on the GPU against float64's, with TF32 off (the fp32 runs'
    setting) and on: off must be fp32's, and on must differ (else the switch switches nothing)."""
    import torch

    from ..backends.pytorch import set_tf32

    generator = torch.Generator("cuda").manual_seed(0)
    a, b = (torch.randn(size, size, device="cuda", generator=generator) for _ in range(2))
    exact = a.double() @ b.double()
    errors = {}
    for precision in ("fp32", "tf32"):
        set_tf32(precision)
        errors[precision] = float(((a @ b).double() - exact).norm() / exact.norm())
    set_tf32("fp32")
    return {"device": torch.cuda.get_device_name(0), "fp32_error": errors["fp32"], "tf32_error": errors["tf32"]}


def tf32_verdict(probe: dict) -> Verdict:
    cell = f"torch matmul {probe['device']}"
    holds = probe["fp32_error"] < TF32_ERROR_FP32 < probe["tf32_error"]
    return _judged(TF32_CHECK, cell, probe["fp32_error"],
                   f"< {TF32_ERROR_FP32:g} (TF32 on: {probe['tf32_error']:.1e})", holds)


def verdicts(records: list[dict], probe: dict | None, unavailable: str | None = None,
             benchmarks: Path | None = None) -> list[Verdict]:
    """Every check's rows; a check with none (its runs missing or failed) is one row saying so; with
    ``unavailable`` (no GPU), every check is one row saying that. The harness's cost is ``make bench``'s table's
    (``benchmarks``: :func:`harness_verdicts`)."""
    if unavailable:
        return [Verdict(check, "", None, "", f"unavailable: {unavailable}")
                for check in [*RECORD_CHECKS, TF32_CHECK, HARNESS_CHECK]]
    found = []
    for check, judge in RECORD_CHECKS.items():
        found += judge(records) or [Verdict(check, "", None, "", "unavailable: no ok GPU run it applies to "
                                                                   "(see the runs' records)")]
    found.append(tf32_verdict(probe) if probe else Verdict(TF32_CHECK, "", None, "", "unavailable: not probed"))
    return [*found, *harness_verdicts(benchmarks)]


def table(found: list[Verdict]) -> str:
    frame = pd.DataFrame([{"check": v.check, "cell": v.cell, "value": "" if v.value is None else f"{v.value:.4g}",
                           "bound": v.bound, "verdict": v.verdict} for v in found])
    return markdown_table(frame)
