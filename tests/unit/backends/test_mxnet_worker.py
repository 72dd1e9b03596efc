"""The thesis's MXNet (1.2.0) in its worker under CPython 3.6, built by the workflow's virtualenv job (PyPI has its
wheel): the description's networks with their parameter counts, its optimizers' math, and the runner driving the
worker through training on RecordIO shards, inference and an accuracy run."""
import json
import os
import subprocess

import pytest
from dlbench import datasets, envs, networks, paths, registry
from dlbench.backends import mxnet_worker, worker
from dlbench.run import runner
from dlbench.spec import RunSpec

from ...conftest import IN_FRAMEWORK
from .test_backends import OPTIMIZER_RATES, _two_reference_steps


def _checks(python: str, *arguments) -> dict:
    found = subprocess.run([python, str(IN_FRAMEWORK / "mxnet_worker_checks.py"), str(mxnet_worker.WORKER),
                            *map(str, arguments)], capture_output=True, text=True, check=False)
    assert found.returncode == 0, found.stderr[-3000:]
    return json.loads(found.stdout.splitlines()[-1])


def test_the_thesis_s_mxnet_builds_every_network_as_described_and_steps_each_optimizer(mxnet_1_2_worker_python,
                                                                                      tmp_path):
    plans, expected = {}, {}
    for name, sizings in networks.SIZINGS.items():
        for sized_for in sizings:
            description = networks.network(name, sized_for)
            plans[f"{name}/{sized_for}"] = [list(description.input_shape),
                                            networks.build(description, worker.DescriptionPlanner())]
            expected[f"{name}/{sized_for}"] = [networks.trainable_parameters(description), [description.num_classes]]
    # Gluon 1.2's LSTM is no HybridBlock: refused by name, never run otherwise than today's MXNet runs it
    expected["lstm/text"] = ("unavailable: MXNet 1.2's gluon.rnn.LSTM is no HybridBlock (1.3 made it one): it cannot "
                             "be hybridised with the network as today's MXNet backend's is")
    (tmp_path / "plans.json").write_text(json.dumps(plans))
    assert _checks(mxnet_1_2_worker_python, "parameters", tmp_path / "plans.json") == expected
    rules = (networks.SGD_MOMENTUM, networks.RMSPROP)
    stepped = _checks(mxnet_1_2_worker_python, "optimizer",
                      json.dumps({rule.kind: [vars(rule), OPTIMIZER_RATES[rule.kind]] for rule in rules}))
    assert "rmsprop" not in registry.REGISTRY["mxnet-1.2"].optimizer_differences
    assert stepped == {rule.kind: pytest.approx(_two_reference_steps(rule, OPTIMIZER_RATES[rule.kind], [1.0, 2.0]),
                                                rel=1e-5) for rule in rules}


@pytest.fixture(scope="module")
def mnist_recordio(tmp_path_factory, mxnet_python):
    """Generated MNIST as RecordIO shards, written by today's MXNet (the workflow's writer)."""
    root = tmp_path_factory.mktemp("mnist")
    datasets.generate("mnist", root / "raw", train_images=96, test_images=40, seed=5)
    datasets.unpack("mnist", root / "raw", root / "data")
    job = {"kind": "convert", "format": "recordio", "family": "mnist", "data_dir": str(root / "data"),
           "output": str(root / "recordio"), "seed": 7}
    subprocess.run([mxnet_python, "-m", "dlbench.formats", json.dumps(job)], check=True, capture_output=True,
                   env=paths.with_package(dict(os.environ)))
    return root / "recordio"


def _result(tmp_path, **changes) -> dict:
    fields = {"framework": "mxnet-1.2", "dataset": "mnist-synthetic", "network": "lenet", "device": "cpu",
              "repetition": 1, "batch_size_global": 16, "iterations": 12, "warmup_iterations": 2,
              "learning_rate": 0.01, "threads": 2, **changes}
    RunSpec(**fields).dump(tmp_path / "spec.json")
    runner.main([str(tmp_path / "spec.json"), str(tmp_path / "result.json")])
    return json.loads((tmp_path / "result.json").read_text())


def _run(tmp_path, **changes) -> dict:
    result = _result(tmp_path, **changes)
    assert result["status"] == "ok", result["reason"]
    return result


def test_the_runner_trains_infers_and_scores_the_thesis_s_mxnet_in_its_worker(tmp_path, mxnet_1_2_worker_python,
                                                                            mnist_recordio, monkeypatch):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, mxnet_1_2_worker_python)
    monkeypatch.chdir(mnist_recordio.parent)  # as the workflow names its data: relative to its directory
    (tmp_path / "train").mkdir()
    trained = _run(tmp_path / "train", dataset="mnist-generated", data_dir=mnist_recordio.name)
    assert trained["framework_version"] == "1.2.0" and trained["python"].startswith("3.6.")
    assert len(trained["iteration_seconds"]) == 12 and 0 < trained["final_loss"] < 10
    assert trained["timed_window"]["input_wait_seconds"] > 0  # ImageRecordIter decoded each batch
    (tmp_path / "inference").mkdir()
    inferred = _run(tmp_path / "inference", task="inference", batch_size_global=8, iterations=20)
    assert len(inferred["iteration_seconds"]) == 20 and inferred["latency_seconds"]
    assert inferred["inference_idiom"] == mxnet_worker.Harness.INFERENCE_IDIOM
    (tmp_path / "accuracy").mkdir()
    scored = _run(tmp_path / "accuracy", dataset="mnist-generated", data_dir=mnist_recordio.name, task="accuracy",
                  iterations=2 * (96 // 16), warmup_iterations=0, epochs=2, target_accuracy=0.0, network="mlp")
    assert [epoch["test_images"] for epoch in scored["epochs"]] == [40, 40]  # each test image once, no filler
    assert all(0 <= epoch["test_accuracy"] <= 1 for epoch in scored["epochs"])


def test_an_lstm_on_the_thesis_s_mxnet_is_unavailable_saying_why(tmp_path, mxnet_1_2_worker_python, monkeypatch):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, mxnet_1_2_worker_python)
    result = _result(tmp_path, dataset="text-synthetic", network="lstm")
    assert result["status"] == "unavailable"
    assert result["reason"].startswith("MXNet 1.2's gluon.rnn.LSTM is no HybridBlock")


def test_a_gpu_run_on_the_cpu_build_is_unavailable_before_its_worker_starts(tmp_path, mxnet_1_2_worker_python,
                                                                             monkeypatch):
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, mxnet_1_2_worker_python)
    result = _result(tmp_path, device="gpu1")
    assert result["status"] == "unavailable"
    assert result["reason"].startswith(f"mxnet-1.2 1.2.0 in {os.path.dirname(os.path.dirname(mxnet_1_2_worker_python))}"
                                       " is a CPU build"), result["reason"]
