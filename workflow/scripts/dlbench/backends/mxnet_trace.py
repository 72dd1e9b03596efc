"""MXNet's profiler trace read back as a per-layer profile (without MXNet: the runner reads the trace of the thesis's
MXNet 1.2 that its worker dumps, as today's MXNet backend reads its own).

MXNet names an operator by its type alone, not by the block that ran it; in a sequential network each layer runs one
operator, so a step's layers are its operators in order: each layer's forward in the description's order, then their
backward in reverse (the loss's and the engine's operators between them are no layer's). The mapping is checked: the
trace must hold exactly as many operators of the layers' types as the steps need. The optimizer's update operators are
the steps' updates, as many in each, timed whole: MXNet updates several weights in one operator
(``multi_sgd_mom_update``), so the update is no layer's.
"""
from __future__ import annotations

import os
import re

from .. import networks
from . import Unavailable, whole_update

METHOD = ("MXNet's profiler (mx.profiler, its Chrome trace): operators, named by type only, matched in order to a "
          "sequential network's layers (forward in the description's order, backward in reverse) and the count "
          "checked; the optimizer's update operators timed whole; bulked execution off while profiling, so that "
          "each operator is its own event")
BULKING = "MXNET_EXEC_BULK_EXEC_TRAIN"  # 0: a hybridised graph's operators each an event of the trace
# A layer kind's operator in MXNet's trace; its backward is "_backward_" and the operator's name, Flatten's a copy
OPERATORS = {"conv": "Convolution", "batchnorm": "BatchNorm", "relu": "Activation", "maxpool": "Pooling",
             "globalavgpool": "Pooling", "flatten": "Flatten", "dense": "FullyConnected", "dropout": "Dropout"}
BACKWARD_OPERATORS = {"Flatten": "_backward_copy", "Reshape": "_backward_copy"}
# The optimizer's update operators: SGD with momentum (sgd_mom_update; several weights at once, MXNet's default
# aggregation: multi_sgd_mom_update, preloaded_multi_sgd_mom_update; fp16's master weights: mp_ in them) and RMSprop
UPDATE_OPERATOR = re.compile(r"^(preloaded_)?(multi_)?(mp_)?(sgd|sgd_mom|rmsprop)_update$")


def set_bulking(bulking: str | None) -> None:
    """MXNet's bulking of a graph's operators for the next graph it builds (None: its default)."""
    if bulking is None:
        os.environ.pop(BULKING, None)
    else:
        os.environ[BULKING] = bulking


def _sequential(node) -> bool:
    if isinstance(node, networks.Sequential):
        return all(map(_sequential, node.layers))
    return not isinstance(node, (networks.Concat, networks.Residual))


def profiled_layers(description: networks.Network) -> list[str]:
    """The layers a profile maps MXNet's operators to (see :class:`TraceReader`)."""
    layers = networks.layer_names(description)
    if not _sequential(description.body) or any(name.rstrip("0123456789") not in OPERATORS for name in layers):
        raise Unavailable("profile: MXNet's profiler names operators by type alone; they are mapped to the layers of "
                          "sequential networks of one operator per layer only (not branches, residuals or LSTMs)")
    return layers


def require_one_device(devices: int) -> None:
    """The operators are matched to the layers in order: one chain of them, on one device."""
    if devices > 1:
        raise Unavailable(f"{devices} devices: mx.profiler's operator events name neither their layer nor their "
                          "device, so the chains of several devices cannot be told apart")


class TraceReader:
    """A layer profiler's results (``steps``, ``update``, ``update_untimed``) from MXNet's trace events.
    ``operators``: a release's own names where they differ from :data:`OPERATORS` (MXNet 1.2's hybridised Flatten
    is a Reshape)."""

    devices = all_reduce = layer_updates = None  # it profiles one device; its update operators span several layers

    def __init__(self, layers: list[str], operators: dict[str, str] | None = None):
        self.layers, self.steps, self.update = layers, [], None
        self.update_untimed = "the trace was not read"
        forward = [{**OPERATORS, **(operators or {})}[name.rstrip("0123456789")] for name in layers]
        self.pattern = [*((layer, 0, operator) for layer, operator in zip(layers, forward)),
                        *((layer, 1, BACKWARD_OPERATORS.get(operator, f"_backward_{operator}"))
                          for layer, operator in reversed(list(zip(layers, forward))))]

    def read(self, events: list[dict]) -> None:
        """Each step's (forward, backward) seconds per layer, and each step's update, from the trace's events."""
        begun, operators = {}, []
        for event in events:
            if event.get("cat") == "operator" and event["ph"] in "BE":
                key = (event["name"], event["pid"], event["tid"])
                if event["ph"] == "B":
                    begun[key] = event["ts"]
                else:
                    start = begun.pop(key)
                    operators.append((start, (event["ts"] - start) / 1e6, event["name"]))
        steps, position, times = [], 0, {}
        for _, seconds, name in sorted(operators):
            layer, backward, expected = self.pattern[position]
            if name == expected:
                times.setdefault(layer, [0.0, 0.0])[backward] += seconds
                position = (position + 1) % len(self.pattern)
                if not position:
                    steps.append({done: tuple(pair) for done, pair in times.items()})
                    times = {}
        found = sum(name in {operator for _, _, operator in self.pattern} for _, _, name in operators)
        if position or found != len(steps) * len(self.pattern):
            raise RuntimeError(f"MXNet's trace does not map onto the layers: {found} operators of their types for "
                               f"{len(steps)} complete steps of {len(self.pattern)}")
        self.steps = steps
        self.update, self.update_untimed = self._updates([seconds for _, seconds, name in sorted(operators)
                                                          if UPDATE_OPERATOR.match(name)], len(steps))

    @staticmethod
    def _updates(updates: list[float], steps: int) -> tuple[list[float] | None, str | None]:
        """Each step's update: every step runs as many update operators, in order; counted, not placed by time, as
        the engine runs the last layers' updates beside the next step's first layers."""
        if steps and len(updates) % steps:
            return None, f"the trace's {len(updates)} update operators do not divide among its {steps} steps"
        per_step = len(updates) // steps if steps else 0
        return whole_update([sum(updates[step * per_step:(step + 1) * per_step]) for step in range(steps)],
                            "the trace holds no optimizer update operator (sgd_mom_update and its kin)")
