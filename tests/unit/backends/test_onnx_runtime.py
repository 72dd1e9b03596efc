"""ONNX Runtime: the network PyTorch builds, exported by torch.onnx and run by an InferenceSession,
computes PyTorch's logits; it runs inference (a real run under the monitor) and says it cannot train."""
import jsonschema
import numpy as np
import pytest
import torch
from dlbench import networks
from dlbench.backends import onnx_runtime, pytorch

from ..run.test_monitor import run, spec


@pytest.mark.parametrize("name,variant", [("lenet", "mnist"), ("lstm", "text"), ("resnet50", "cifar10")])
def test_the_exported_network_computes_pytorchs_logits_at_any_batch_size(tmp_path, name, variant):
    description = networks.network(name, variant)
    torch.manual_seed(0)
    model = pytorch.build(description).eval()
    images = torch.randn(4, *description.input_shape)
    onnx_runtime.export(model, images, tmp_path / "model.onnx")
    session = onnx_runtime.session(tmp_path / "model.onnx", threads=2, gpus=0)
    with torch.no_grad():
        expected = model(images).numpy()
    for batch in (4, 1):  # the batch axis is dynamic: the latency calls run single images
        logits = session.run(None, {onnx_runtime.INPUT: images[:batch].numpy()})[0]
        np.testing.assert_allclose(logits, expected[:batch], rtol=1e-4, atol=1e-5)


def test_a_real_onnx_runtime_inference_run_and_its_training_run_unavailable(tmp_path, record_schema):
    record = run(tmp_path, spec(framework="onnxruntime", task="inference", network="lstm", dataset="text-synthetic",
                                iterations=12, warmup_iterations=2, latency_calls=40))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "ok", record["reason"]
    assert record["provenance"]["packages"]["onnxruntime"] and record["provenance"]["framework_build"] == "cpu"
    assert record["latency"]["idiom"].startswith("InferenceSession.run of the network exported by torch.onnx")
    assert len(record["latency"]["call_ms"]) == 40 and record["timing"]["images_per_second_mean"] > 0
    assert record["execution"]["compiler"] == "ONNX Runtime's graph optimisations"
    record = run(tmp_path, spec(framework="onnxruntime"))
    assert (record["status"], record["reason"]) == ("unavailable", "train: onnxruntime runs inference only")
