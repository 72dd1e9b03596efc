"""Seed 001's input path: Keras's model.fit over the training split as NumPy arrays (a case's keras_fit), each step
timed from fit's own per-step callback — a real Keras-on-PyTorch run on synthetic and on generated MNIST — and the
config that asks for it (Keras frameworks, training only, its own variant)."""
import sys

import jsonschema
import numpy as np
import pytest
from dlbench.config import ConfigError, cases

from ..run.test_monitor import run, spec
from ..tasks.test_accuracy import _converted, generated_mnist  # noqa: F401 - the fixture
from ..test_config import validated


@pytest.mark.parametrize("data", ["synthetic", "generated"])
def test_keras_trains_through_fit_and_each_step_is_timed(tmp_path, request, record_schema, data):
    # generated: 256 images, 8 batches of 32 an epoch, so that 20 steps take fit over three epochs
    data_dir = (str(_converted(request.getfixturevalue("generated_mnist"), "lmdb", sys.executable))
                if data == "generated" else None)
    record = run(tmp_path, spec(framework="keras-torch", network="mlp", dataset=f"mnist-{data}", keras_fit=True,
                                iterations=20, warmup_iterations=5, data_dir=data_dir))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "ok", record["reason"]
    assert record["run"]["keras_fit"] is True
    timing = record["timing"]
    assert len(timing["iteration_seconds"]) == 20 and all(seconds > 0 for seconds in timing["iteration_seconds"])
    assert timing["images_per_second_mean"] == pytest.approx(32 * 15 / sum(timing["iteration_seconds"][5:]), rel=1e-3)
    assert timing["step_completion"].startswith("Keras's callback")
    assert timing["input_wait_seconds"] is None  # fit's input path is inside its steps, out of the loop's sight
    assert np.isfinite(record["quality"]["final_loss"])


@pytest.mark.needs_env
@pytest.mark.parametrize("framework,python", [("keras-tensorflow", "tensorflow_python"), ("keras-jax", "jax_python")])
def test_fit_on_the_other_keras_backends(tmp_path, request, framework, python):
    record = run(tmp_path, spec(framework=framework, network="mlp", keras_fit=True, iterations=12, warmup_iterations=2),
                 python=request.getfixturevalue(python))
    assert record["status"] == "ok", record["reason"]
    assert len(record["timing"]["iteration_seconds"]) == 12 and np.isfinite(record["quality"]["final_loss"])


def test_a_run_without_keras_fit_has_no_such_field(tmp_path):
    record = run(tmp_path, spec(framework="keras-torch", network="mlp", iterations=4, warmup_iterations=1))
    assert record["status"] == "ok", record["reason"]
    assert "keras_fit" not in record["run"]


def test_keras_fit_names_its_cells_and_asks_for_keras_frameworks_that_train():
    bench = {"dataset": "mnist", "data": "synthetic", "networks": ["mlp"], "keras_fit": True}
    config = validated({"frameworks": ["keras-torch", "keras-jax"], "devices": ["cpu"], "benchmarks": [bench]})
    assert {(case.framework, case.variant) for case in cases(config)} == {("keras-torch", "fp32-fit"),
                                                                        ("keras-jax", "fp32-fit")}
    config = validated({"frameworks": ["keras-torch", "pytorch"], "devices": ["cpu"], "benchmarks": [bench]})
    with pytest.raises(ConfigError, match=r"benchmarks\[0\].keras_fit: model.fit is Keras's; the case runs pytorch "
                                          r"too: name its frameworks \(allowed: keras-tensorflow, keras-jax, keras-"):
        cases(config)
    config = validated({"frameworks": ["keras-torch"], "devices": ["cpu"],
                        "benchmarks": [{**bench, "tasks": ["train", "inference"]}]})
    with pytest.raises(ConfigError, match=r"keras_fit: model.fit times training; the case's tasks: train, inference"):
        cases(config)
    # beside the same network's train_on_batch cells: two variants, not a clash
    config = validated({"frameworks": ["keras-torch"], "devices": ["cpu"],
                        "benchmarks": [bench, {**bench, "keras_fit": False}]})
    assert sorted(case.variant for case in cases(config)) == ["fp32", "fp32-fit"]
