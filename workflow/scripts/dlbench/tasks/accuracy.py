"""The accuracy task: whole epochs of training, each followed by an evaluation on the test split; its record
block is ``quality``'s accuracy part (``dlbench.record.build.quality``)."""
from __future__ import annotations

import functools
import time

from ..spec import RunSpec
from . import first_process
from .loop import prefixed, timed_loop


def evaluate(harness) -> dict:
    """Top-1 accuracy and mean cross-entropy over the test split, scored from the harness's logits the same
    way for every framework (log-softmax in float64)."""
    import numpy as np  # every framework environment has it; the runner's module imports stay standard library

    correct, loss, images = 0, 0.0, 0
    for logits, labels in harness.test_logits():
        logits, labels = np.asarray(logits, np.float64), np.asarray(labels, np.int64)
        shifted = logits - logits.max(axis=1, keepdims=True)
        log_probabilities = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        loss -= log_probabilities[np.arange(len(labels)), labels].sum()
        correct += int((logits.argmax(axis=1) == labels).sum())
        images += len(labels)
    if images == 0:
        raise RuntimeError("the test split gave no images")
    return {"test_accuracy": correct / images, "test_loss": loss / images, "test_images": images}


def run(harness, spec: RunSpec, progress=print) -> dict:
    """An accuracy run: ``spec.epochs`` epochs of training steps, each timed as speed runs time theirs (no
    warm-up: the first steps count, as they do for a user), each followed by an evaluation on the test split.
    The timed window runs from the first step to the last epoch's end; its seconds are the training steps'.
    Over several processes the first evaluates (the weights are the same in all), the others wait for it
    in the next epoch's first step."""
    steps, evaluating = spec.iterations // spec.epochs, first_process()
    epochs, times, elapsed, window = [], [], 0.0, {}
    for epoch in range(1, spec.epochs + 1):
        timing = timed_loop(harness, steps, 0, functools.partial(prefixed, progress, f"epoch {epoch}/{spec.epochs}, "))
        trained = timing["timed_window"]
        train_loss = harness.final_loss()
        started = time.perf_counter()
        scores = evaluate(harness) if evaluating else {}
        evaluated = time.perf_counter() - started
        elapsed += trained["seconds"] + evaluated
        epochs.append({"epoch": epoch, "steps": steps, "train_seconds": trained["seconds"],
                       "images_per_second": steps * spec.batch_size_global / trained["seconds"],
                       "train_loss": train_loss, **scores, "eval_seconds": evaluated, "elapsed_seconds": elapsed})
        if evaluating:
            progress(f"epoch {epoch}/{spec.epochs}: test accuracy {scores['test_accuracy']:.4f}, loss "
                     f"{scores['test_loss']:.4f} ({scores['test_images']} images), {trained['seconds']:.1f} s "
                     f"training, {evaluated:.1f} s evaluating", flush=True)
        times += timing["iteration_seconds"]
        waited = trained["input_wait_seconds"]
        window = {"start_epoch": window.get("start_epoch", trained["start_epoch"]), "end_epoch": trained["end_epoch"],
                  "cpu_seconds": window.get("cpu_seconds", 0.0) + trained["cpu_seconds"],
                  "seconds": window.get("seconds", 0.0) + trained["seconds"],
                  "input_wait_seconds": None if waited is None else window.get("input_wait_seconds", 0.0) + waited}
    return {"iteration_seconds": times, "timed_window": window, "epochs": epochs,
            "final_loss": epochs[-1]["train_loss"]}


def record_blocks(spec: RunSpec, result: dict, not_ok: str | None, record: dict) -> dict:
    """The record's quality block with the run's accuracy over its epochs in place of "not measured"."""
    quality = {key: value for key, value in record["quality"].items() if key != "reasons"}
    quality.update(accuracy_block(spec, result.get("epochs") or [], not_ok))
    found = quality.pop("reasons")
    reasons = {key: why for key, why in record["quality"]["reasons"].items() if quality[key] is None} | found
    return {"quality": {**quality, "reasons": reasons}}


def accuracy_block(spec: RunSpec, epochs: list[dict], not_ok: str | None) -> dict:
    """An accuracy run's epochs, its last test accuracy, its time to the target accuracy and its total time."""
    block = {"accuracy": epochs[-1]["test_accuracy"] if epochs else None, "epochs": epochs,
             "epochs_to_accuracy": None, "time_to_accuracy_seconds": None,
             "total_seconds": epochs[-1]["elapsed_seconds"] if epochs else None, "reasons": {}}
    reached = [epoch for epoch in epochs if spec.target_accuracy is not None
               and epoch["test_accuracy"] >= spec.target_accuracy]
    if reached:
        block.update(epochs_to_accuracy=reached[0]["epoch"], time_to_accuracy_seconds=reached[0]["elapsed_seconds"])
    else:
        why = (not_ok or "no epoch was evaluated" if not epochs
               else "the case sets no target_accuracy" if spec.target_accuracy is None
               else f"no epoch of {len(epochs)} reached {spec.target_accuracy:g} (best "
                    f"{max(epoch['test_accuracy'] for epoch in epochs):.4f})")
        block["reasons"] = dict.fromkeys(("epochs_to_accuracy", "time_to_accuracy_seconds"), why)
    if block["accuracy"] is None:
        block["reasons"]["accuracy"] = block["reasons"]["total_seconds"] = not_ok or "no epoch was evaluated"
    return block
