"""A GPU its framework's CUDA build has no code for is unavailable before the run, saying which GPUs the build
covers; a GPU that runs PTX JIT-compiled by the driver is said in the record. Arch lists as the pinned builds
report them (PyPI's torch 2.13, TensorFlow 2.21), on fake GPUs."""
import pytest
from dlbench import backends
from dlbench.backends import GpuCode, Unavailable, check_gpu_code
from dlbench.run import runner

from ..checks.test_gpu_envs import compile_gpu_library, needs_nvcc
from ..run.test_monitor import spec

TORCH_2_13 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
TENSORFLOW_2_21 = ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]
H100, K20M, A10, B200 = ("NVIDIA H100 80GB HBM3", 90), ("Tesla K20m", 35), ("NVIDIA A10", 86), ("NVIDIA B200", 100)


def test_a_cuda_10_build_on_a_hopper_gpu_is_unavailable_naming_both():
    cntk = GpuCode.from_arch_names("cntk-gpu 2.7", "10.0", [f"sm_{arch}" for arch in (30, 35, 50, 60, 70, 75)],
                                   [H100])
    with pytest.raises(Unavailable, match=r"^cntk-gpu 2.7 \(CUDA 10.0\) has kernels for sm_30…sm_75; this GPU "
                                          r"\(NVIDIA H100 80GB HBM3\) is sm_90, which it has no kernels for$"):
        check_gpu_code(cntk)


def test_a_build_without_sm_35_on_the_thesiss_k20m_is_unavailable():
    with pytest.raises(Unavailable, match=r"torch 2.13.0 \(CUDA 13.0\) has kernels for sm_75…sm_120; this GPU "
                                          r"\(Tesla K20m\) is sm_35"):
        check_gpu_code(GpuCode.from_arch_names("torch 2.13.0", "13.0", TORCH_2_13, [K20M]))


def test_a_gpu_only_ptx_matches_runs_it_jit_compiled_and_says_so():
    said = check_gpu_code(GpuCode.from_arch_names("cuDNN-free 1.0", "12.8", ["sm_60", "sm_70", "compute_70"], [H100]))
    assert said == ("NVIDIA H100 80GB HBM3 (sm_90): the build's PTX compute_70, JIT-compiled by the driver when the "
                    "first step loads it (that step's time holds the compile)")


def test_tensorflows_compute_90_is_sm_90s_own_kernels():
    """TensorFlow's build info lists compute_90 for the kernels and the PTX its toolchain builds for sm_90."""
    said = check_gpu_code(GpuCode.from_arch_names("TensorFlow 2.21.0", "12.5.1", TENSORFLOW_2_21, [H100],
                                                  ptx_with_kernels=True))
    assert said == "NVIDIA H100 80GB HBM3 (sm_90): the build's sm_90 kernels"


def test_kernels_run_on_later_gpus_of_their_major_version_only():
    assert check_gpu_code(GpuCode.from_arch_names("torch 2.13.0", "13.0", TORCH_2_13, [A10])) == \
        "NVIDIA A10 (sm_86): the build's sm_86 kernels"
    older = GpuCode.from_arch_names("TensorFlow 2.21.0", "12.5.1", ["sm_60", "sm_70", "sm_80"], [A10])
    assert check_gpu_code(older) == "NVIDIA A10 (sm_86): the build's sm_80 kernels"
    with pytest.raises(Unavailable, match=r"has kernels for sm_80…sm_90a; this GPU \(NVIDIA B200\) is sm_100"):
        check_gpu_code(GpuCode.from_arch_names("jaxlib", "12", ["sm_80", "sm_90a"], [B200]))


# ONNX Runtime 1.31.1's CUDA provider (libonnxruntime_providers_cuda.so's fatbinary): no PTX
ONNX_RUNTIME_1_31 = ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90a", "sm_120a"]


@pytest.mark.parametrize("gpu,said", [
    (H100, "NVIDIA H100 80GB HBM3 (sm_90): the build's sm_90a kernels"),
    (("NVIDIA GeForce RTX 5090", 120), "NVIDIA GeForce RTX 5090 (sm_120): the build's sm_120a kernels"),
    (B200, None), (("NVIDIA GB10", 121), None), (("Tesla V100-SXM2-16GB", 70), None)])
def test_architecture_specific_kernels_run_on_their_own_capability_alone(gpu, said):
    code = GpuCode.from_arch_names("onnxruntime 1.31.1", "13.0", ONNX_RUNTIME_1_31, [gpu])
    if said:
        assert check_gpu_code(code) == said
    else:
        with pytest.raises(Unavailable, match=rf"has kernels for sm_75…sm_120a; this GPU \({gpu[0]}\) is "
                                              rf"sm_{gpu[1]}, which it has no kernels for"):
            check_gpu_code(code)


def test_xla_and_a_framework_that_cannot_say_are_recorded_as_such():
    xla = GpuCode("jax 0.10.2", "12", gpus=(H100,), compiled_at_run_time=True)
    assert check_gpu_code(xla) == "NVIDIA H100 80GB HBM3 (sm_90): kernels compiled for it at run time"
    assert check_gpu_code("MXNet 1.9.1 does not report") == "not checked: MXNet 1.9.1 does not report"


def test_a_gpu_run_on_a_gpu_torch_has_no_kernels_for_ends_before_the_trainer_is_built(monkeypatch):
    """The runner asks the framework itself (torch.cuda's arch list and device capability; a K20m faked)."""
    import torch

    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: TORCH_2_13)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: (3, 5))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: "Tesla K20m")
    built = []
    pytorch = backends.load("pytorch")

    class Recorded(pytorch.Harness):  # the real one's methods; being built is recorded
        def __init__(self, *args):
            built.append(args)
    monkeypatch.setattr(pytorch, "Harness", Recorded)
    with pytest.raises(Unavailable, match=r"^torch .* \(CUDA 13.0\) has kernels for sm_75…sm_120; this GPU "
                                          r"\(Tesla K20m\) is sm_35"):
        runner.run(spec(device="gpu1"))
    assert not built


@needs_nvcc
def test_cntks_gpu_code_is_read_from_its_math_librarys_fatbinary(tmp_path, monkeypatch):
    """CNTK does not report its build's architectures: they come from its library (here one nvcc compiled for
    sm_75 and PTX compute_75, in a worker environment's layout), the GPUs from NVML (faked)."""
    from dlbench import envs
    from dlbench.backends import cntk

    libs = tmp_path / "cntk-env" / "lib" / "python3.6" / "site-packages" / "cntk" / "libs"
    compile_gpu_library(libs / "libCntk.Math-2.7.so", "arch=compute_75,code=[sm_75,compute_75]")
    (libs / "libcudart.so.10.0").touch()
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, str(tmp_path / "cntk-env" / "bin" / "python"))
    _sm_75_with_its_ptx_on_an_h100_and_a_k20m(cntk.gpu_code, r"CNTK 2.7 \(CUDA 10.0\)", monkeypatch)


def _sm_75_with_its_ptx_on_an_h100_and_a_k20m(gpu_code, build: str, monkeypatch) -> None:
    """A build of sm_75 kernels and PTX compute_75 runs JIT-compiled on an H100 and not at all on a K20m."""
    from dlbench.hardware import gpu

    monkeypatch.setattr(gpu, "visible_gpus", lambda: [H100])
    assert check_gpu_code(gpu_code()).startswith(f"{H100[0]} (sm_90): the build's PTX compute_75, JIT-compiled")
    monkeypatch.setattr(gpu, "visible_gpus", lambda: [K20M])
    with pytest.raises(Unavailable, match=rf"^{build} has kernels for sm_75 and PTX compute_75; this GPU "
                                          r"\(Tesla K20m\) is sm_35"):
        check_gpu_code(gpu_code())


@pytest.mark.parametrize("framework,library", [("mxnet-1.2", "mxnet/libmxnet.so"),
                                               ("tensorflow-1.9", "tensorflow/python/_pywrap_tensorflow_internal.so")])
def test_a_thesis_release_s_gpu_code_is_read_from_its_worker_library_s_fatbinary(tmp_path, monkeypatch, framework,
                                                                                  library):
    """The thesis's MXNet and TensorFlow do not report their builds' architectures either: they come from the worker
    environment's library (here one nvcc compiled for sm_75 and PTX compute_75), the CUDA build from the worker's
    description (faked: their CUDA 9.0 wheels do not fit here), the GPUs from NVML (faked)."""
    from dlbench import backends, envs
    from dlbench.backends import worker

    compile_gpu_library(tmp_path / "env" / "lib" / "python3.6" / "site-packages" / library,
                        "arch=compute_75,code=[sm_75,compute_75]")
    monkeypatch.setenv(envs.WORKER_PYTHON_VARIABLE, str(tmp_path / "env" / "bin" / "python"))
    monkeypatch.setattr(worker, "describe",
                        lambda python, script, name: {"framework_version": "1.x", "cuda_build": "9.0"})
    module = backends.load(framework)
    _sm_75_with_its_ptx_on_an_h100_and_a_k20m(module.gpu_code, rf"{framework} 1.x \(CUDA 9.0\)", monkeypatch)
    (tmp_path / "env" / "lib" / "python3.6" / "site-packages" / library).unlink()
    assert module.gpu_code() == f"no {library} in {tmp_path / 'env'}"
