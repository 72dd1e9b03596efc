"""The profile task: training steps timed as a training run's, then as many again under the framework's own
profiler; its record block is ``profile``."""
from __future__ import annotations

import functools
import statistics
import time

from ..spec import RunSpec
from .loop import prefixed, timed_loop


def run(harness, spec: RunSpec, progress=print) -> dict:
    """A profile run: the training steps timed as a training run's, with no profiler (the speed); then as
    many timed steps again, and one before them that is left out (the profiler starting), under the
    framework's own profiler, which records each layer's forward and backward time per step. Over several
    devices, where the profiler times them apart: each device's layers, and each step's all-reduce. And the
    optimizer's update: per layer where the profiler says whose weights its ops update, else whole (the first
    device's)."""
    result = timed_loop(harness, spec.iterations, spec.warmup_iterations, progress)
    began = time.perf_counter()
    with harness.layer_profiler() as profiler:
        profiled = timed_loop(harness, spec.iterations - spec.warmup_iterations + 1, 1,
                              functools.partial(prefixed, progress, "profiled, "))
    steps, devices, all_reduce = profiler.steps, profiler.devices, profiler.all_reduce  # its trace, read
    layer_updates, update = profiler.layer_updates, profiler.update
    return {**result, "final_loss": harness.final_loss(),
            "profile": {"method": profiler.METHOD, "iteration_seconds": profiled["iteration_seconds"][1:],
                        "layers": steps[1:], "devices": [device[1:] for device in devices or ()],
                        "all_reduce_seconds": (all_reduce or [])[1:],
                        "layer_update_seconds": layer_updates and layer_updates[1:],
                        "update_seconds": update and update[1:], "update_untimed": profiler.update_untimed,
                        # seed 004's overhead: the whole profiled training, the profiler's start, every step and
                        # its trace read, in wall seconds
                        "whole_seconds": time.perf_counter() - began,
                        "whole_steps": len(profiled["iteration_seconds"])}}


PROFILE_FIELDS = ("iteration_ms", "unprofiled_iteration_ms", "overhead", "whole_overhead", "whole_seconds",
                  "whole_unprofiled_seconds", "whole_overhead_seconds", "accounted_ms", "unaccounted_share",
                  "update_ms", "update_share")
SEVERAL_DEVICES_FIELDS = ("all_reduce_ms", "all_reduce_share", "devices")


def _ms(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values) * 1e3, (statistics.stdev(values) if len(values) > 1 else 0.0) * 1e3


def _layers(steps: list[dict], updates: list[dict] | None = None) -> list[dict]:
    """Each layer's mean and sd of its forward and backward times over the steps, in walk order; and of its weights'
    update, where ``updates`` has it per layer (else None)."""
    layers = []
    for name in steps[0]:
        (forward, forward_sd), (backward, backward_sd) = (_ms([step[name][phase] for step in steps])
                                                          for phase in (0, 1))
        update, update_sd = _ms([step[name] for step in updates]) if updates else (None, None)
        layers.append({"name": name, "kind": name.rstrip("0123456789"), "forward_ms": forward,
                       "forward_sd_ms": forward_sd, "backward_ms": backward, "backward_sd_ms": backward_sd,
                       "update_ms": update, "update_sd_ms": update_sd})
    return layers


def record_blocks(spec: RunSpec, result: dict, not_ok: str | None, record: dict) -> dict:
    return {"profile": layer_profile(spec, result, not_ok)}


def layer_profile(spec: RunSpec, result: dict, not_ok: str | None) -> dict:
    """A profile run's layers (mean and sd of their forward and backward times over the profiled steps, and of
    their weights' update where the profiler attributes it), the optimizer's whole update per step and its share,
    the profiler's overhead (a profiled step's mean time over an unprofiled one's; and seed 004's, the whole
    profiled training's wall time over as many unprofiled steps') and the share of a profiled step that neither
    the layers (forward, backward) nor the update account for (seed 004's two findings). Over several devices
    each device's layers (the first's are ``layers``) and the all-reduce's mean time per step and share of the
    step."""
    found = result.get("profile") or {}
    steps = found.get("layers") or []
    if not steps:
        return {"method": found.get("method"), "steps": 0, **dict.fromkeys(PROFILE_FIELDS + SEVERAL_DEVICES_FIELDS),
                "layers": [], "reasons": dict.fromkeys(PROFILE_FIELDS, not_ok or "no step was profiled")}
    iteration = _ms(found["iteration_seconds"])[0]
    unprofiled = _ms(spec.split_warmup(result["iteration_seconds"])[1])[0]
    update = _ms(found["update_seconds"])[0] if found.get("update_seconds") else None
    accounted = _ms([sum(forward + backward for forward, backward in step.values()) for step in steps])[0]
    accounted += update or 0.0
    whole = found.get("whole_seconds")
    unprofiled_whole = whole and found["whole_steps"] * unprofiled / 1e3  # as many steps without the profiler
    block = {"method": found["method"], "steps": len(steps), "iteration_ms": iteration,
             "unprofiled_iteration_ms": unprofiled, "overhead": iteration / unprofiled,
             "whole_overhead": whole and whole / unprofiled_whole, "whole_seconds": whole,
             "whole_unprofiled_seconds": unprofiled_whole, "whole_overhead_seconds": whole and whole - unprofiled_whole,
             "accounted_ms": accounted,
             "unaccounted_share": 1 - accounted / iteration, "update_ms": update,
             "update_share": update and update / iteration,
             "layers": _layers(steps, found.get("layer_update_seconds")), "reasons": {},
             **dict.fromkeys(SEVERAL_DEVICES_FIELDS)}
    if found.get("devices"):
        block["devices"] = [{"process": rank, "layers": _layers(device)}
                            for rank, device in enumerate(found["devices"])]
    if found.get("all_reduce_seconds"):
        block["all_reduce_ms"] = _ms(found["all_reduce_seconds"])[0]
        block["all_reduce_share"] = block["all_reduce_ms"] / iteration
    if spec.processes * max(spec.gpus, 1) == 1:
        why = dict.fromkeys(SEVERAL_DEVICES_FIELDS, "one device: no all-reduce")
    else:
        why = {"devices": f"{spec.framework}'s profile does not time a step's devices apart",
               **dict.fromkeys(("all_reduce_ms", "all_reduce_share"),
                               f"{spec.framework}'s profile does not time the all-reduce apart")}
    block["reasons"] = {field: why[field] for field in SEVERAL_DEVICES_FIELDS if block[field] is None}
    if whole is None:
        block["reasons"].update(dict.fromkeys(("whole_overhead", "whole_seconds", "whole_unprofiled_seconds",
                                               "whole_overhead_seconds"),
                                              "the dlbench that ran it did not time the whole profiled training"))
    if update is None:
        block["reasons"].update(dict.fromkeys(("update_ms", "update_share"), found.get("update_untimed") or (
            "the dlbench that ran it did not time the optimizer's update")))
    return block
