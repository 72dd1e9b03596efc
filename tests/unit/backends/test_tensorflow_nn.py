"""TensorFlow's raw tf.nn ops (seed 002's hand-written LeNet, in TensorFlow's own ops): the network its description
describes, computing Keras's logits from Keras's weights; a real inference run under the monitor, and no training."""
import jsonschema

from ...conftest import run_in
from ..run.test_monitor import run, spec


def test_raw_ops_build_the_described_network_and_compute_keras_logits(tensorflow_python):
    result = run_in(tensorflow_python, "tensorflow_nn_logits.py")
    assert len(result) == 5
    for network, found in result.items():
        assert found["raw"] == found["keras"] == found["described"], network
        assert found["before_copy"] > 1e-3 and found["largest_logit"] > 1e-3, network  # its own weights; live logits
    # Where Keras's layers pad as the description does (GoogLeNet's and ResNet-18's strided convolutions: Keras's
    # "same" puts the odd pixel after, the raw ops pad as described), the same logits from the same weights
    for network in ("lenet/mnist", "alexnet_bn/cifar10", "mlp/mnist"):
        assert result[network]["largest_difference"] <= 1e-5 * result[network]["largest_logit"], network


def test_a_real_raw_op_inference_run_and_its_training_run_unavailable(tmp_path, tensorflow_python, record_schema):
    record = run(tmp_path, spec(framework="tensorflow-nn", task="inference", iterations=12, warmup_iterations=2,
                                latency_calls=40), python=tensorflow_python)
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "ok", record["reason"]
    assert record["latency"]["idiom"].startswith("raw tf.nn ops") and len(record["latency"]["call_ms"]) == 40
    assert record["timing"]["images_per_second_mean"] > 0 and record["provenance"]["packages"]["tensorflow-cpu"]
    assert record["execution"]["compiler"] == "tf.function graph"
    record = run(tmp_path, spec(framework="tensorflow-nn"), python=tensorflow_python)
    assert (record["status"], record["reason"]) == ("unavailable", "train: tensorflow-nn runs inference only")
    lstm = run(tmp_path, spec(framework="tensorflow-nn", task="inference", network="lstm", dataset="text-synthetic",
                              iterations=4, warmup_iterations=1, latency_calls=10), python=tensorflow_python)
    assert (lstm["status"], lstm["reason"]) == (
        "unavailable", "tf.nn has no LSTM op: the raw-op builder builds convolutional and dense networks")
