"""The record's ``compute`` block: the FLOP rate a run achieved, its share of the hardware's peak (MFU) and
of the node's measured ceiling.

FLOPs per image (of a training step; of a forward pass in inference) come from the network's description
(:func:`dlbench.networks.training_flops`, ``inference_flops``; ``torch.utils.flop_counter``'s convention),
the same in every framework. MFU is the achieved rate over the peak of all the run's devices from the
hardware's own numbers (:mod:`dlbench.hardware.peaks`); ``ceiling_fraction`` is the achieved rate over the best
dense product the node's device reached in the run's precision (:mod:`dlbench.run.ceiling`, one job per node and
precision). A run that beats that ceiling by more than :data:`BEATS_CEILING` carries ``ceiling_flag``.
"""
from __future__ import annotations

from ..datasets import description
from ..hardware.cluster import local_processes
from ..hardware.peaks import Peak
from ..networks import inference_flops, training_flops
from ..spec import RunSpec, gpu_count

# A run faster than its measured ceiling by more than this share: the ceiling's kernels are not the fastest the
# device has, or the FLOP count is off; flagged, never a silent fraction above 1.
BEATS_CEILING = 1.05


def processor(device: str) -> str:
    """Which kind of device trains a run on ``device``, and whose ceiling it is measured against."""
    return "gpu" if gpu_count(device) else "cpu"


def flops_per_image(spec: RunSpec) -> int:
    """Of a training step, or of a forward pass in an inference run."""
    count = inference_flops if spec.task == "inference" else training_flops
    return count(description(spec.network, spec.family, spec.input_size, spec.classes))


def ceiling_devices(spec: RunSpec) -> int:
    """How many of the ceiling's devices the run trains on: its GPUs; for CPUs its nodes (processes on
    one machine share its cores, and the ceiling was measured with a CPU run's threads)."""
    if spec.gpus:
        return gpu_count(spec.device)
    return 1 if local_processes(spec.device) == spec.processes else spec.nodes


def mismatch(ceiling: dict, host: str, gpus: list[dict]) -> str | None:
    """Why a ceiling is not this run's device's (None where it is): another host, another GPU model or driver."""
    node = ceiling["node"]
    where = f"the ceiling was measured on {node['host']}"
    if node["host"] != host:
        return f"{where}, this run ran on {host}"
    measured_on = node["gpu"]
    for gpu in gpus:
        if (gpu["name"], gpu["driver"]) != (measured_on["name"], measured_on["driver"]):
            return (f"{where}'s {measured_on['name']} (driver {measured_on['driver']}), this run used "
                    f"a {gpu['name']} (driver {gpu['driver']})")
    return None


def block(spec: RunSpec, images_per_second: float | None, ceiling: dict | None, host: str,
          gpus: list[dict], not_ok: str | None, peak: Peak,
          no_ceiling: str = "no ceiling was measured for this run (it ran outside the workflow)") -> dict:
    """``flops_per_image`` always; ``achieved_tflops`` for an ok run; ``peak_tflops`` (``peak`` of one device
    times the run's devices) and ``mfu`` where the hardware's peak is known; ``ceiling_tflops`` (all the run's
    devices) and ``ceiling_fraction`` where the node's ceiling was measured; a reason for each that is null
    (``no_ceiling`` where there is no ceiling)."""
    flops = flops_per_image(spec)
    achieved = flops * images_per_second / 1e12 if images_per_second else None
    reasons = {}
    total = None
    if ceiling is None:
        why = no_ceiling
    elif ceiling["tflops"] is None:
        why = f"the ceiling could not be measured: {ceiling['reason']}"
    else:
        why = mismatch(ceiling, host, gpus)
        if why is None:
            total = ceiling["tflops"] * ceiling_devices(spec)
    if total is None:
        reasons["ceiling_tflops"] = why
    if achieved is None:
        reasons["achieved_tflops"] = not_ok or "no images per second"
    fraction = achieved / total if achieved is not None and total else None
    if fraction is None:
        reasons["ceiling_fraction"] = reasons.get("achieved_tflops") or why
    peak_total = peak.tflops * ceiling_devices(spec) if peak.tflops is not None else None
    if peak_total is None:
        reasons["peak_tflops"] = peak.reason
    mfu = achieved / peak_total if achieved is not None and peak_total else None
    if mfu is None:
        reasons["mfu"] = reasons.get("achieved_tflops") or peak.reason
    flag = None
    if fraction is not None and fraction > BEATS_CEILING:
        kernel = f" ({ceiling['kernel']} of {ceiling['size']})" if "kernel" in ceiling else ""
        flag = (f"{achieved:.3g} TFLOP/s is {fraction:.2f} × the measured ceiling{kernel}: the run's kernels outran "
                "every product the ceiling tried, or the network's FLOP count is off")
    return {"flops_per_image": flops, "achieved_tflops": achieved, "peak_tflops": peak_total, "mfu": mfu,
            "ceiling_tflops": total, "ceiling_fraction": fraction, "ceiling_flag": flag, "reasons": reasons}
