"""Which definition of GPU memory and power the thesis used, decided by its own numbers. Its Appendix A gives
one value per run for one and for two GPUs and does not say whether a two-GPU value is the sum over the cards or
one card's (their mean). Each definition rules out some pairs of one-GPU and two-GPU values on physical grounds
alone (:data:`TESTS`). Over the appendix's cells, the definition that the fewer cells contradict is the one
``thesis.md`` sets beside the thesis's; the other stays in the records and in the appendix."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pandas as pd

# Metric.over_gpus: the sum over a run's GPUs, or their mean (one card's)
DEFINITIONS = {"sum": "summed over the run's GPUs", "mean": "one card's (the mean over the run's GPUs)"}
# Our MNIST LeNet (431,080 parameters: 1.7 MiB) with its gradients, momentum and batch 64's activations takes under
# 16 MiB; twice that bounds what a card holds beyond its CUDA context and framework
LENET_MODEL_MIB = 32.0


@dataclass(frozen=True)
class Test:
    metric: str  # the thesis's (Appendix A)
    refutes: str  # the definition (:data:`DEFINITIONS`) a contradicting cell rules out
    words: str  # why such a cell cannot be true under that definition
    contradicts: Callable[[pd.Series], bool]  # over a cell's one, two (GPUs' values), speedup, network, framework
    applies: Callable[[pd.Series], bool] = lambda cell: True


def _not_allocator(cell: pd.Series) -> bool:
    return cell["framework"] != "TensorFlow"  # TF 1.9's allocator took most of the card: it measures no model


TESTS = (
    Test("gpu_memory", "sum", "two GPUs' memory below one GPU's: each card holds its own CUDA context and weights "
         "and its share of the batch, so the pair holds at least what one card held alone",
         lambda cell: cell["two"] < cell["one"], _not_allocator),
    Test("gpu_memory", "sum", f"MNIST LeNet's two GPUs below twice one GPU's less {LENET_MODEL_MIB:.0f} MiB: its "
         "weights, gradients and activations are a few MiB, one card's figure is its CUDA context and framework, "
         "and a second card holds another",
         lambda cell: cell["two"] < 2 * (cell["one"] - LENET_MODEL_MIB),
         lambda cell: _not_allocator(cell) and cell["network"] == "LeNet"),
    Test("gpu_memory", "mean", "a card of two holding more than twice one GPU's memory: it holds the same context "
         "and weights and at most the same batch",
         lambda cell: cell["two"] > 2 * cell["one"], _not_allocator),
    Test("gpu_power", "sum", "two GPUs drawing less than one while training at least as fast: each card draws at "
         "least its idle power and together they do at least the same work a second",
         lambda cell: cell["two"] < cell["one"] and cell["speedup"] >= 1),
    Test("gpu_power", "mean", "a card of two drawing more than twice one GPU's power: it does at most the same "
         "work a second",
         lambda cell: cell["two"] > 2 * cell["one"]),
)
EVIDENCE_COLUMNS = ["metric", "gpu", "refutes", "test", "cells", "contradicting", "examples"]


def pairs(reference: pd.DataFrame) -> pd.DataFrame:
    """Appendix A (as the thesis names things) as one row per metric, GPU model, dataset, network and framework
    measured on one and on two GPUs: ``one``, ``two`` and the training speed-up of the two."""
    values = reference[reference["value"] > 0].pivot_table(
        index=["metric", "dataset", "network", "framework"], columns="hardware", values="value")
    rows = []
    for gpu in ("k20m", "p100"):
        if not {f"1x_{gpu}", f"2x_{gpu}"} <= set(values.columns):
            continue
        both = values[[f"1x_{gpu}", f"2x_{gpu}"]].dropna().set_axis(["one", "two"], axis=1).reset_index()
        speed = both[both["metric"] == "train_speed"].set_index(["dataset", "network", "framework"])
        both = both.join((speed["two"] / speed["one"]).rename("speedup"), on=["dataset", "network", "framework"])
        rows.append(both[both["metric"] != "train_speed"].assign(gpu=gpu))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=["metric", "gpu", "one", "two"])


def evidence(reference: pd.DataFrame) -> pd.DataFrame:
    """Per test (:data:`TESTS`) and GPU model: the cells it applies to and those that contradict its definition,
    the first three named."""
    cells = pairs(reference)
    rows = []
    for test in TESTS:
        for gpu, group in cells[cells["metric"] == test.metric].groupby("gpu"):
            tested = group[group.apply(test.applies, axis=1)]
            wrong = tested[tested.apply(test.contradicts, axis=1)] if len(tested) else tested
            examples = [f"{c.dataset} {c.network} {c.framework}: {c.one:g} → {c.two:g}" for c in wrong.itertuples()]
            rows.append({"metric": test.metric, "gpu": gpu, "refutes": test.refutes, "test": test.words,
                         "cells": len(tested), "contradicting": len(wrong),
                         "examples": "; ".join(examples[:3]) + ("; …" if len(examples) > 3 else "")})
    return pd.DataFrame(rows, columns=EVIDENCE_COLUMNS)


def decide(found: pd.DataFrame) -> dict[str, str]:
    """Per thesis metric, the definition that the smaller share of its tested cells contradicts (the sum, our
    own, where the two tie)."""
    chosen = {}
    for metric, tests in found.groupby("metric"):
        totals = tests.groupby("refutes")[["contradicting", "cells"]].sum()
        share = {definition: totals.at[definition, "contradicting"] / max(totals.at[definition, "cells"], 1)
                 if definition in totals.index else 0.0 for definition in DEFINITIONS}
        chosen[metric] = "mean" if share["mean"] < share["sum"] else "sum"
    return chosen


@cache
def chosen(path: Path) -> dict[str, str]:
    """The definition of each of the thesis's GPU metrics that its appendix (``path``) supports."""
    return decide(evidence(pd.read_csv(path)))


def summary(found: pd.DataFrame, decided: dict[str, str]) -> str:
    """The decision in words, with its counts: thesis.md's section on what our memory and power are."""
    lines = []
    for metric, definition in sorted(decided.items()):
        tests = found[found["metric"] == metric]
        counts = {d: (int(tests[tests["refutes"] == d]["contradicting"].sum()),
                      int(tests[tests["refutes"] == d]["cells"].sum())) for d in DEFINITIONS}
        neither = " Neither fits every cell: a weak decision." if counts["sum"][0] and counts["mean"][0] else ""
        lines.append(f"- **{metric.replace('_', ' ')}**: {DEFINITIONS[definition]}. Of the appendix's one- and two-GPU "
                     f"pairs, {counts['sum'][0]} of {counts['sum'][1]} tested contradict the sum and "
                     f"{counts['mean'][0]} of {counts['mean'][1]} the mean (the tests below).{neither}")
    return "\n".join(lines)
