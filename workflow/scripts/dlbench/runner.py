"""The child process of a run: build the network, train (or infer), time every iteration.

Started by :mod:`dlbench.monitor` with the framework environment's interpreter::

    python -m dlbench.runner SPEC.json RESULT.json

It imports the standard library, numpy (through :mod:`dlbench.datasets`; every framework's environment
has it) and its framework. The result file carries what only the training process can know:
per-iteration times (each read as a step finishes, an asynchronous step's successor already
dispatched), the timed window in wall-clock time (so the monitor can cut its GPU samples to it), the
process CPU time over that window, the final loss, the framework's own memory peak, and how long the
set-up before the first step took (import, build).
"""
from __future__ import annotations

import contextlib
import functools
import os
import statistics
import sys
import time
import traceback
from pathlib import Path

from . import backends, files, lifeline
from .datasets import description
from .spec import RunSpec, default_warmup

RESULT_UNWRITTEN = 3  # the exit status when the result file could not be written (a full disk)


def _cpu_seconds(trainer) -> float:
    """CPU time of this process, and of the worker process where the framework trains in one (CNTK)."""
    worker = getattr(trainer, "worker_cpu_seconds", None)
    return time.process_time() + (worker() if worker else 0.0)


def timed_loop(trainer, iterations: int, warmup: int, progress=print, step=None) -> dict:
    """Run ``iterations`` steps (the trainer's, or ``step``: an inference run's forward passes) with one
    step in flight, as a real training loop runs.

    An asynchronous step (CUDA, MXNet's engine) is dispatched before the loop waits for the one
    before it, so the device never idles while Python dispatches; a step that had finished when
    ``step()`` returned is clocked at once. An interval runs from one step's completion to the
    next, the intervals sum to the wall time of all steps, and the timed window opens with the
    warm-up finished and nothing in flight.
    """
    times: list[float] = []
    window: dict = {}
    report_every = max(1, iterations // 10)

    def open_window() -> None:
        window.update(start_epoch=time.time(), cpu_start=_cpu_seconds(trainer),
                      input_wait_start=trainer.input_wait_seconds())

    def step_finished() -> None:
        nonlocal last
        now = time.perf_counter()
        times.append(now - last)
        last = now
        if len(times) == warmup:
            open_window()
        done = len(times)
        if done % report_every == 0 or done == iterations:
            phase = "warm-up" if done <= warmup else "timed"
            progress(f"iteration {done}/{iterations} ({phase}): {times[-1] * 1e3:.1f} ms", flush=True)

    step = step or trainer.step
    trainer.synchronize()
    if warmup == 0:
        open_window()
    last = time.perf_counter()
    in_flight = None  # how to wait for the step dispatched last, until it is clocked
    for index in range(iterations):
        if index == warmup and in_flight:
            in_flight()
            step_finished()
            in_flight = None
        wait_for_step = step()
        if wait_for_step is backends.already_finished:
            step_finished()
            continue
        if in_flight:
            in_flight()
            step_finished()
        in_flight = wait_for_step
    trainer.synchronize()
    if in_flight:
        step_finished()
    input_wait = trainer.input_wait_seconds()
    return {
        "iteration_seconds": times,
        "timed_window": {
            "start_epoch": window["start_epoch"],
            "end_epoch": time.time(),
            "cpu_seconds": _cpu_seconds(trainer) - window["cpu_start"],
            "seconds": sum(times[warmup:]),
            "input_wait_seconds": None if input_wait is None else input_wait - window["input_wait_start"],
        },
    }


def inference(trainer, spec: RunSpec, progress=print) -> dict:
    """An inference run: the throughput of forward passes at the case's batch size, timed as training
    steps are (one batch in flight); then the latency of single images, each call waited for until
    its result is there, one after another."""
    timing = timed_loop(trainer, spec.iterations, spec.warmup_iterations, progress,
                        step=trainer.inference(spec.batch_size_global))
    single = trainer.inference(1)
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
            "inference_idiom": trainer.INFERENCE_IDIOM}


def _prefixed(progress, prefix: str, line: str, **kwargs) -> None:
    progress(prefix + line, **kwargs)


def evaluate(trainer) -> dict:
    """Top-1 accuracy and mean cross-entropy over the test split, scored from the trainer's logits the same
    way for every framework (log-softmax in float64)."""
    import numpy as np  # every framework environment has it; the runner's module imports stay standard library

    correct, loss, images = 0, 0.0, 0
    for logits, labels in trainer.test_logits():
        logits, labels = np.asarray(logits, np.float64), np.asarray(labels, np.int64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss -= log_probabilities[np.arange(len(labels)), labels].sum()
        correct += int((logits.argmax(axis=1) == labels).sum())
        images += len(labels)
    if images == 0:
        raise RuntimeError("the test split gave no images")
    return {"test_accuracy": correct / images, "test_loss": loss / images, "test_images": images}


def accuracy(trainer, spec: RunSpec, progress=print) -> dict:
    """An accuracy run: ``spec.epochs`` epochs of training steps, each timed as speed runs time theirs (no
    warm-up: the first steps count, as they do for a user), each followed by an evaluation on the test split.
    The timed window runs from the first step to the last epoch's end; its seconds are the training steps'."""
    steps = spec.iterations // spec.epochs
    epochs, times, elapsed, window = [], [], 0.0, {}
    for epoch in range(1, spec.epochs + 1):
        timing = timed_loop(trainer, steps, 0, functools.partial(_prefixed, progress, f"epoch {epoch}/{spec.epochs}, "))
        trained = timing["timed_window"]
        train_loss = trainer.final_loss()
        started = time.perf_counter()
        scores = evaluate(trainer)
        evaluated = time.perf_counter() - started
        elapsed += trained["seconds"] + evaluated
        epochs.append({"epoch": epoch, "steps": steps, "train_seconds": trained["seconds"],
                       "images_per_second": steps * spec.batch_size_global / trained["seconds"],
                       "train_loss": train_loss, **scores, "eval_seconds": evaluated, "elapsed_seconds": elapsed})
        progress(f"epoch {epoch}/{spec.epochs}: test accuracy {scores['test_accuracy']:.4f}, loss "
                 f"{scores['test_loss']:.4f} ({scores['test_images']} images), {trained['seconds']:.1f} s training, "
                 f"{evaluated:.1f} s evaluating", flush=True)
        times += timing["iteration_seconds"]
        waited = trained["input_wait_seconds"]
        window = {"start_epoch": window.get("start_epoch", trained["start_epoch"]), "end_epoch": trained["end_epoch"],
                  "cpu_seconds": window.get("cpu_seconds", 0.0) + trained["cpu_seconds"],
                  "seconds": window.get("seconds", 0.0) + trained["seconds"],
                  "input_wait_seconds": None if waited is None else window.get("input_wait_seconds", 0.0) + waited}
    return {"iteration_seconds": times, "timed_window": window, "epochs": epochs,
            "final_loss": epochs[-1]["train_loss"]}


def profile(trainer, spec: RunSpec, progress=print) -> dict:
    """A profile run: the training steps timed as a training run's, with no profiler (the speed); then as
    many timed steps again, and one before them that is left out (the profiler starting), under the
    framework's own profiler, which records each layer's forward and backward time per step."""
    result = timed_loop(trainer, spec.iterations, spec.warmup_iterations, progress)
    with trainer.layer_profiler() as profiler:
        profiled = timed_loop(trainer, spec.iterations - spec.warmup_iterations + 1, 1,
                              functools.partial(_prefixed, progress, "profiled, "))
    return {**result, "final_loss": trainer.final_loss(),
            "profile": {"method": profiler.METHOD, "iteration_seconds": profiled["iteration_seconds"][1:],
                        "layers": profiler.steps[1:]}}


def _first_process() -> bool:
    """One process of a data-parallel group (rank 0; torchrun sets RANK) speaks for the run: it
    prints the progress and writes the result. Each step ends with the gradients of all."""
    return os.environ.get("RANK", "0") == "0"


def _quiet(*args, **kwargs) -> None:
    pass


def run(spec: RunSpec) -> dict:
    backends.require_numerics(spec)
    backends.require_task(spec)
    backends.require_input(spec)
    started = time.perf_counter()
    backend = backends.load(spec.framework)
    result = backends.describe(backend)
    imported = time.perf_counter()
    backends.require_cuda_build(spec, result)
    if spec.gpus:  # a GPU the build has no code for is unavailable here, not an error in the timed loop
        result["gpu_code"] = backends.check_gpu_code(backend.gpu_code())
    with backends.closing(backend.Trainer(spec, description(spec.network, spec.family, spec.input_size))) as trainer:
        result.update(import_seconds=imported - started, build_seconds=time.perf_counter() - imported)
        progress = print if _first_process() else _quiet
        progress(f"{spec.framework} {result['framework_version']}: {spec.task} {spec.network} on {spec.dataset}, "
                 f"{spec.device}, {spec.variant}, batch {spec.batch_size_global}, {spec.iterations} iterations "
                 f"({spec.warmup_iterations} warm-up), {spec.threads} threads", flush=True)
        if spec.task == "inference":
            result.update(inference(trainer, spec, progress))
        elif spec.task == "accuracy":
            result.update(accuracy(trainer, spec, progress))
        elif spec.task == "profile":
            result.update(profile(trainer, spec, progress))
        else:
            result.update(timed_loop(trainer, spec.iterations, spec.warmup_iterations, progress))
            result["final_loss"] = trainer.final_loss()
        result["framework_allocator_peak_mib"] = trainer.allocator_peak_mib()
    return result


def _error_name(error: BaseException) -> str:
    kind = type(error)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def main(argv: list[str]) -> int:
    entered_epoch = time.time()  # the monitor's clock from its launch to here: the interpreter's start
    lifeline.watch()  # before anything slow: a monitor killed meanwhile ends this run at once
    spec_path, result_path = map(Path, argv)
    spec = RunSpec.load(spec_path)
    try:
        result = {"status": "ok", "reason": "", "entered_epoch": entered_epoch, **run(spec)}
        code = 0
    except backends.Unavailable as error:
        result, code = {"status": "unavailable", "reason": str(error)}, 0
    except Exception as error:  # noqa: BLE001 - any failure becomes the record's reason
        with contextlib.suppress(OSError):  # the log's disk may be the full one
            traceback.print_exc()
        result, code = {"status": "failed", "reason": f"{_error_name(error)}: {error}"}, 1
    if _first_process():
        try:
            files.write_json(result_path, result)
        except OSError as error:  # a full disk: the monitor finds no result and says why
            with contextlib.suppress(OSError):
                print(f"the result could not be written: {error}", file=sys.stderr)
            return RESULT_UNWRITTEN
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
