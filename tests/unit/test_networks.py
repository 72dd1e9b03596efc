"""One description per network: published parameter counts, and the PyTorch build matches it."""
import types

import pytest
import torch
from dlbench import backends, networks
from dlbench.backends.pytorch import build
from torch.utils.flop_counter import FlopCounterMode

CASES = [(name, sized_for) for name, sizings in networks.SIZINGS.items() for sized_for in sizings]

# Published trainable-parameter counts of the ImageNet models (torchvision; GoogLeNet without aux heads).
PUBLISHED = {"alexnet": 61_100_840, "vgg16": 138_357_544, "resnet50": 25_557_032, "googlenet": 6_624_904,
             "resnet18": 11_689_512, "vgg11": 132_863_336}


@pytest.mark.parametrize("name", PUBLISHED)
def test_imagenet_sizings_have_the_published_parameter_counts(name):
    assert networks.trainable_parameters(networks.network(name, "imagenet")) == PUBLISHED[name]


def test_alexnet_bn_is_alexnet_with_batch_norm_in_place_of_the_biases_before_each_relu():
    """Seed 004's AlexNet: every convolution and hidden dense layer normalised, their biases left out."""
    plain, normed = (networks.network(name, "imagenet") for name in ("alexnet", "alexnet_bn"))
    normalised = (64 + 192 + 384 + 256 + 256) + 2 * 4096
    assert networks.trainable_parameters(normed) == networks.trainable_parameters(plain) - normalised + 2 * normalised
    names = networks.layer_names(normed)
    assert names.count("batchnorm1") == 1 and "batchnorm7" in names and "batchnorm8" not in names
    assert networks.training_flops(normed) == networks.training_flops(plain)  # batch norm is not counted


def test_lenet_is_caffes_lenet():
    assert networks.trainable_parameters(networks.network("lenet", "mnist")) == 431_080


def test_mlp_is_the_keras_benchmarks_mlp_and_trains_with_rmsprop():
    assert networks.trainable_parameters(networks.network("mlp", "mnist")) == 669_706  # Keras's model.summary()
    assert networks.optimizer("mlp") == networks.RMSPROP and networks.optimizer("lenet") == networks.SGD_MOMENTUM


def test_cifar10_cnn_is_the_keras_benchmarks_cnn_and_trains_with_rmsprop():
    assert networks.trainable_parameters(networks.network("cifar10_cnn", "cifar10")) == 1_250_858  # model.summary()
    assert networks.optimizer("cifar10_cnn") == networks.RMSPROP


def test_lstm_is_the_keras_benchmarks_lstm():
    # Keras's model.summary(): LSTM 96,768 (one bias vector per gate), Dense 7,740
    assert networks.trainable_parameters(networks.network("lstm", "text")) == 104_508
    assert networks.optimizer("lstm") == networks.RMSPROP


def test_resnet50_trains_at_24_30_gflop_per_imagenet_image():
    assert networks.training_flops(networks.network("resnet50", "imagenet")) / 1e9 == pytest.approx(24.30, abs=0.005)


@pytest.mark.parametrize("name,sized_for", CASES)
def test_training_flops_are_what_pytorchs_flop_counter_counts(name, sized_for):
    """One training step of the workflow's own PyTorch model, on the meta device (no arithmetic)."""
    description = networks.network(name, sized_for)
    batch = 3
    with torch.device("meta"):
        model = build(description)
        images = torch.empty(batch, *description.input_shape)
        labels = torch.zeros(batch, dtype=torch.long)
    with FlopCounterMode(display=False) as counter:
        torch.nn.functional.cross_entropy(model(images), labels).backward()
    assert networks.training_flops(description) == pytest.approx(counter.get_total_flops() / batch, rel=0.01)
    with FlopCounterMode(display=False) as counter, torch.inference_mode():
        model.eval()(images)
    assert networks.inference_flops(description) == pytest.approx(counter.get_total_flops() / batch, rel=0.01)


# A training step at ImageNet's size takes seconds on a CPU (VGG16's 3.6 s on two cores): those sizings are the slow
# tier's, the fast tier builds and steps every network at its smaller sizes (the builders are the same)
@pytest.mark.parametrize("name,sized_for", [
    pytest.param(name, sized_for, marks=[pytest.mark.slow] if sized_for == "imagenet" else [])
    for name, sized_for in CASES])
def test_pytorch_build_has_the_described_parameters_and_trains_one_step(name, sized_for):
    description = networks.network(name, sized_for)
    model = build(description)
    counted = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert counted == networks.trainable_parameters(description)

    images = torch.randn(2, *description.input_shape)
    labels = torch.randint(0, description.num_classes, (2,))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    before = [p.detach().clone() for p in model.parameters()]
    loss = torch.nn.functional.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
    assert torch.isfinite(loss)
    assert any(not torch.equal(b, p) for b, p in zip(before, model.parameters()))


def test_unknown_network_and_sizing_are_named():
    with pytest.raises(KeyError, match="unknown network 'lenet5'.*known: lenet"):
        networks.network("lenet5", "mnist")
    with pytest.raises(KeyError, match="lenet is not sized for 'cifar10'"):
        networks.network("lenet", "cifar10")


def test_mismatched_residual_is_rejected():
    body = networks.Sequential((networks.Conv(8, 3, 2, 1),))
    with pytest.raises(ValueError, match="Residual body"):
        networks.walk(networks.Residual(body), (4, 8, 8))


def _leaves(node):
    for child in getattr(node, "layers", ()) or getattr(node, "branches", ()):
        yield from _leaves(child)
    if isinstance(node, networks.Residual):
        yield from _leaves(node.body)
        if node.shortcut is not None:
            yield from _leaves(node.shortcut)
    elif not isinstance(node, networks.Sequential | networks.Concat):
        yield node


def test_the_builder_contract_is_every_layer_kind_the_networks_use_and_the_builders_implement_it():
    used = {type(leaf).__name__.lower()
            for name, sized_for in CASES for leaf in _leaves(networks.network(name, sized_for).body)}
    contract = {name for name in vars(networks.Builder) if not name.startswith("_")}
    assert contract == used | {"sequential", "concat", "residual"}
    from dlbench.backends.cntk import CntkPlanner
    from dlbench.backends.pytorch import TorchBuilder

    for builder in (TorchBuilder, CntkPlanner):  # the others are checked by building in their environments
        assert contract <= set(dir(builder)), builder


def test_a_backend_missing_part_of_its_contract_is_refused():
    assert backends.load("pytorch").Harness and backends.load("cntk").Harness
    incomplete = types.ModuleType("dlbench.backends.incomplete")
    incomplete.Harness, incomplete.build = object, object
    with pytest.raises(TypeError, match="does not implement backends.Backend: no PACKAGES, cuda_build, "
                                        "forward_shape, framework_version, gpu_code, trainable_parameters"):
        backends.check_contract(incomplete)


def test_pytorch_convolutions_run_channels_last_where_it_is_faster():
    """On CPUs always (measured: benchmarks/memory_format.py); on GPUs where tensor cores run them."""
    import torch
    from dlbench.backends import pytorch
    from dlbench.spec import RunSpec

    def spec(device, precision="fp32", compile=False):
        return RunSpec("pytorch", "cifar10-synthetic", "resnet50", device, 1, 4, 2, 1, 0.01, 1, precision=precision,
                       compile=compile)

    harness = pytorch.Harness(spec("cpu"), networks.network("resnet50", "cifar10"))
    first_conv = next(module for module in harness.model.modules() if isinstance(module, torch.nn.Conv2d))
    images, _ = harness.next_batch()
    assert first_conv.weight.is_contiguous(memory_format=torch.channels_last)
    assert images.is_contiguous(memory_format=torch.channels_last) and not images.is_contiguous()
    harness.step()  # trains in that layout
    resnet = networks.network("resnet50", "cifar10")
    assert pytorch.memory_format(spec("gpu1"), resnet) == torch.contiguous_format  # fp32: no tensor cores
    assert {pytorch.memory_format(spec("gpu1", p), resnet) for p in ("tf32", "bf16", "fp16")} == {torch.channels_last}
    assert pytorch.memory_format(spec("gpu1", compile=True), resnet) == torch.channels_last
    assert pytorch.memory_format(spec("cpu"), networks.network("lstm", "text")) == torch.contiguous_format
