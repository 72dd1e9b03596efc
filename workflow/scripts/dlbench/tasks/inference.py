"""The inference task: throughput of forward passes at the case's batch size, then the latency of single
images; its record block is ``latency``."""
from __future__ import annotations

import statistics
import time

from ..spec import RunSpec, default_warmup
from .loop import timed_loop


def run(harness, spec: RunSpec, progress=print) -> dict:
    """An inference run: the throughput of forward passes at the case's batch size, timed as training
    steps are (one batch in flight); then the latency of single images, each call waited for until
    its result is there, one after another."""
    timing = timed_loop(harness, spec.iterations, spec.warmup_iterations, progress,
                        step=harness.inference(spec.batch_size_global))
    single = harness.inference(1)
    warmup, calls = default_warmup(spec.latency_calls), []
    report_every = max(1, spec.latency_calls // 5)
    for index in range(warmup + spec.latency_calls):
        start = time.perf_counter()
        single()()
        calls.append(time.perf_counter() - start)
        timed = index + 1 - warmup
        if timed > 0 and (timed % report_every == 0 or timed == spec.latency_calls):
            progress(f"latency call {timed}/{spec.latency_calls}: median so far "
                     f"{statistics.median(calls[warmup:]) * 1e3:.3f} ms", flush=True)
    return {**timing, "latency_seconds": calls[warmup:], "latency_warmup_calls": warmup,
            "inference_idiom": harness.INFERENCE_IDIOM}


def record_blocks(spec: RunSpec, result: dict, not_ok: str | None, record: dict) -> dict:
    return {"latency": latency(spec, result, not_ok)}


def latency(spec: RunSpec, result: dict, not_ok: str | None) -> dict:
    """An inference run's single-image calls: percentiles and mean in milliseconds, every call kept."""
    calls_ms = [seconds * 1e3 for seconds in result.get("latency_seconds") or []]
    block = {"batch_size": 1, "calls": spec.latency_calls, "warmup_calls": result.get("latency_warmup_calls", 0),
             "call_ms": calls_ms, "idiom": result.get("inference_idiom")}
    if calls_ms:
        percentiles = statistics.quantiles(calls_ms, n=100, method="inclusive") if len(calls_ms) > 1 else calls_ms * 99
        p50, p90, p99 = (percentiles[k - 1] for k in (50, 90, 99))
        block.update(p50_ms=p50, p90_ms=p90, p99_ms=p99, mean_ms=statistics.fmean(calls_ms), reasons={})
    else:
        fields = ("p50_ms", "p90_ms", "p99_ms", "mean_ms")
        block.update(dict.fromkeys(fields), reasons=dict.fromkeys(fields, not_ok or "no call was timed"))
    if block["idiom"] is None:
        block["reasons"]["idiom"] = not_ok or "the runner did not say"
    return block
