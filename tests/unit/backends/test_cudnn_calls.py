"""cuDNN called directly (seed 002's hand-written cuDNN LeNet): on a GPU, the calls compute PyTorch's logits from
PyTorch's weights at any batch size and a real inference run is measured; where there is no GPU (here), a run is
unavailable and says why, and networks it has no calls for are refused by name. The GPU tests (needs_gpu) run on a
node with an NVIDIA GPU (``pytest tests/unit/backends/test_cudnn_calls.py`` there); elsewhere they are skipped."""
import jsonschema
import pytest
import torch
from dlbench import networks
from dlbench.backends import Unavailable, cudnn_calls

from ..run.test_monitor import run, spec


def test_a_cpu_run_is_unavailable_and_says_why(tmp_path, record_schema):
    record = run(tmp_path, spec(framework="cudnn", task="inference", iterations=4, warmup_iterations=1))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "unavailable"
    assert record["reason"] == "cuDNN runs on NVIDIA GPUs: a CPU run has no cuDNN to call"
    record = run(tmp_path, spec(framework="cudnn"))
    assert (record["status"], record["reason"]) == ("unavailable", "train: cudnn runs inference only")


@pytest.mark.parametrize("name,variant,message", [
    ("resnet18", "cifar10", "residual blocks are not written in cuDNN calls here"),
    ("googlenet", "cifar10", "cuDNN's pooling rounds its output size down"),
    ("lstm", "text", "cuDNN's RNN calls are not written here"),
])
def test_networks_without_calls_are_refused_by_name(name, variant, message):
    description = networks.network(name, variant)
    named = networks.Named(cudnn_calls.TorchBuilder())
    networks.build(description, named)
    with pytest.raises(Unavailable, match=message):
        cudnn_calls.Network(description, named.leaves, "fp32")


@pytest.mark.needs_gpu
@pytest.mark.parametrize("name,variant,precision", [
    ("lenet", "mnist", "fp32"), ("mlp", "mnist", "fp32"), ("alexnet_bn", "cifar10", "fp32"),
    ("cifar10_cnn", "cifar10", "fp32"), ("lenet", "mnist", "tf32")])
def test_the_calls_compute_pytorchs_logits_at_any_batch_size(name, variant, precision):
    description = networks.network(name, variant)
    torch.manual_seed(0)
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"  # as in both
    named = networks.Named(cudnn_calls.TorchBuilder())
    model = networks.build(description, named).cuda().eval()
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):  # statistics that are not the identity
            module.running_mean.uniform_(-0.5, 0.5)
            module.running_var.uniform_(0.5, 2.0)
    cudnn = cudnn_calls.Library()
    network = cudnn_calls.Network(description, named.leaves, precision)
    images = torch.randn(8, *description.input_shape, device="cuda")
    with torch.inference_mode():
        expected = model(images)
    for batch in (8, 1):  # the latency calls run single images
        logits = network.plan(cudnn, batch)(images[:batch]).clone()
        torch.cuda.synchronize()
        assert expected.abs().max() > 1e-3  # live logits
        if precision == "fp32":
            torch.testing.assert_close(logits, expected[:batch], rtol=1e-4, atol=1e-5)
        else:  # TF32's 10-bit mantissa in both, not necessarily in the same kernels
            assert (logits - expected[:batch]).abs().max() <= 1e-2 * expected.abs().max()
    cudnn.close()


@pytest.mark.needs_gpu
def test_a_real_cudnn_inference_run(tmp_path, record_schema):
    record = run(tmp_path, spec(framework="cudnn", task="inference", device="gpu1", iterations=40,
                                warmup_iterations=5, latency_calls=100))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "ok", record["reason"]
    assert record["latency"]["idiom"].startswith("cuDNN's C API") and len(record["latency"]["call_ms"]) == 100
    assert record["timing"]["images_per_second_mean"] > 0
    assert record["run"]["framework_version"] == cudnn_calls.framework_version()
    # The algorithm search's workspace is bounded: the process's peak is the CUDA context and PyTorch's tensors
    assert 0 < record["memory"]["framework_allocator_peak_mib"] < cudnn_calls.FIND_WORKSPACE_MIB + 64
    assert 0 < record["memory"]["gpu_process_peak_mib"] < 2048
