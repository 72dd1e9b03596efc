"""ONNX Runtime: the network PyTorch builds, exported by torch.onnx and run by an InferenceSession,
computes PyTorch's logits; it runs inference (a real run under the monitor) and says it cannot train."""
import jsonschema
import numpy as np
import pytest
import torch
from dlbench import networks
from dlbench.backends import onnx_runtime, pytorch

from ..run.test_monitor import run, spec


# ResNet50 (a residual network, batch norm; 5 s of export on two cores) in the slow tier; LeNet and the LSTM fast
@pytest.mark.parametrize("name,variant", [("lenet", "mnist"), ("lstm", "text"),
                                          pytest.param("resnet50", "cifar10", marks=pytest.mark.slow)])
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
    assert record["provenance"]["packages"]["onnxruntime"]
    cuda = onnx_runtime.cuda_build()  # the CPU package's None; the run asked in a process of its own
    assert record["provenance"]["framework_build"] == (f"cuda {cuda}" if cuda else "cpu")
    assert record["latency"]["idiom"].startswith("InferenceSession.run of the network exported by torch.onnx")
    assert len(record["latency"]["call_ms"]) == 40 and record["timing"]["images_per_second_mean"] > 0
    assert record["execution"]["compiler"] == "ONNX Runtime's graph optimisations"
    record = run(tmp_path, spec(framework="onnxruntime"))
    assert (record["status"], record["reason"]) == ("unavailable", "train: onnxruntime runs inference only")


def test_a_gpu_session_that_fell_back_to_the_cpu_is_unavailable_with_onnx_runtimes_words(tmp_path, monkeypatch):
    """onnxruntime-gpu without CUDA's libraries (or with a driver too old) makes its session on the CPU provider
    and logs why to standard error: that is the run's reason, before any timed call."""
    import os

    from dlbench.backends import Unavailable

    said = (b"[E:onnxruntime:Default, provider_bridge_ort.cc:2251 TryGetProviderInfo_CUDA] Failed to load library "
            b"libonnxruntime_providers_cuda.so with error: libcublasLt.so.13: cannot open shared object file\n")

    class FellBack:
        def __init__(self, path, options, providers):
            assert providers == [onnx_runtime.CUDA]
            os.write(2, said)  # as ONNX Runtime's C++ logger writes it

        def get_providers(self):
            return ["CPUExecutionProvider"]

    monkeypatch.setattr(onnx_runtime.onnxruntime, "InferenceSession", FellBack)
    with pytest.raises(Unavailable, match=r"session runs on CPUExecutionProvider, not CUDAExecutionProvider: "
                                          r".*libcublasLt.so.13: cannot open shared object file$"):
        onnx_runtime.session(tmp_path / "model.onnx", threads=1, gpus=1)


def test_a_gpu_onnx_runtimes_cuda_provider_has_no_kernels_for_is_unavailable_naming_both(tmp_path, monkeypatch):
    """ONNX Runtime does not say what it was compiled for: its CUDA provider library's fatbinary does (1.31.1:
    sm_75 to sm_120a, no PTX), so a B200 is refused before the run."""
    from dlbench.backends import GpuCode, Unavailable, check_gpu_code
    from dlbench.envs import elf

    from .test_gpu_code import ONNX_RUNTIME_1_31

    package = tmp_path / "onnxruntime"
    (package / "capi").mkdir(parents=True)
    (package / "capi" / "libonnxruntime_providers_cuda.so").write_bytes(b"")
    monkeypatch.setattr(onnx_runtime.onnxruntime, "__file__", str(package / "__init__.py"))
    monkeypatch.setattr(elf, "fatbin_architectures",
                        lambda path: ONNX_RUNTIME_1_31 if path.name == "libonnxruntime_providers_cuda.so" else [])
    monkeypatch.setattr(onnx_runtime, "torch_gpu_code", lambda: GpuCode("torch", "13.0", gpus=(("NVIDIA B200", 100),)))
    monkeypatch.setattr(onnx_runtime, "cuda_build", lambda: "13.0")
    with pytest.raises(Unavailable, match=r"^onnxruntime .* \(CUDA 13.0\) has kernels for sm_75…sm_120a; this GPU "
                                          r"\(NVIDIA B200\) is sm_100, which it has no kernels for$"):
        check_gpu_code(onnx_runtime.gpu_code())
