"""The record's ``compute`` block: the FLOP rate a run achieved, and its share of the node's ceiling.

FLOPs per image (of a training step; of a forward pass in inference) come from the network's description
(:func:`dlbench.networks.training_flops`, ``inference_flops``; ``torch.utils.flop_counter``'s convention),
the same in every framework. The ceiling is what a large
matrix product reached on the node's device in the run's precision (:mod:`dlbench.ceiling`, one job per
node and precision); MFU is the achieved rate over the ceiling of all the run's devices.
"""
from __future__ import annotations

from .datasets import description
from .launch import local_processes
from .networks import inference_flops, training_flops
from .spec import RunSpec, gpu_count


def processor(device: str) -> str:
    """Which kind of device trains a run on ``device``, and whose ceiling it is measured against."""
    return "gpu" if gpu_count(device) else "cpu"


def flops_per_image(spec: RunSpec) -> int:
    """Of a training step, or of a forward pass in an inference run."""
    count = inference_flops if spec.task == "inference" else training_flops
    return count(description(spec.network, spec.family, spec.input_size))


def ceiling_devices(spec: RunSpec) -> int:
    """How many of the ceiling's devices the run trains on: its GPUs; for CPUs its nodes (processes on
    one machine share its cores, and the ceiling was measured with a CPU run's threads)."""
    if spec.gpus:
        return gpu_count(spec.device)
    return 1 if local_processes(spec.processes) == spec.processes else spec.processes


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
          gpus: list[dict], not_ok: str | None,
          no_ceiling: str = "no ceiling was measured for this run (it ran outside the workflow)") -> dict:
    """``flops_per_image`` always; ``achieved_tflops`` for an ok run; ``ceiling_tflops`` (all the run's
    devices) and ``mfu`` where the node's ceiling was measured; a reason for each that is null
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
    mfu = achieved / total if achieved is not None and total else None
    if mfu is None:
        reasons["mfu"] = reasons.get("achieved_tflops") or why
    return {"flops_per_image": flops, "achieved_tflops": achieved, "ceiling_tflops": total, "mfu": mfu,
            "reasons": reasons}
