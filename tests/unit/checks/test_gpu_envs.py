"""make gpu-envs-check's parts, on libraries compiled here: the GPU code a fatbinary carries (nvcc's, read
back without CUDA's tools), the dynamic loader's view of an environment (a CUDA library the environment lacks
fails it; the driver is the node's), and the stand-in driver that lets a library linked to it load."""
import shutil
import subprocess
import sys

import pytest
from dlbench.backends import GpuCode, check_gpu_code
from dlbench.checks import gpu_envs
from dlbench.envs import elf

KERNEL = "__global__ void add(float *x) { x[threadIdx.x] += 1.0f; }\nvoid launch(float *x) { add<<<1, 32>>>(x); }\n"


needs_nvcc = pytest.mark.skipif(not shutil.which("nvcc"), reason="no nvcc on this machine to compile a fatbinary with")


def compile_gpu_library(library, *gencode: str) -> None:
    """A shared library with one kernel, compiled by nvcc for each ``-gencode`` target (``arch=...,code=...``)."""
    library.parent.mkdir(parents=True, exist_ok=True)
    source = library.with_suffix(".cu")
    source.write_text(KERNEL)
    targets = [argument for target in gencode for argument in ("-gencode", target)]
    subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", *targets, "-o", str(library), str(source)],
                   check=True, capture_output=True)


@needs_nvcc
def test_the_gpu_code_nvcc_compiled_is_read_back_from_the_library(tmp_path):
    library = tmp_path / "libkernel.so"
    compile_gpu_library(library, "arch=compute_75,code=sm_75", "arch=compute_86,code=sm_86",
                        "arch=compute_90,code=compute_90")
    names = elf.fatbin_architectures(library)
    assert names == ("sm_75", "sm_86", "compute_90") and elf.fatbin_size(library) > 0
    code = GpuCode.from_arch_names("libkernel", "13.0", names, [("H100", 90), ("A10", 86)])
    assert "PTX compute_90" in check_gpu_code(code) and "sm_86 kernels" in check_gpu_code(code)


def _library(path, source: str, *link) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / f"{path.name}.c").write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", f"-Wl,-soname,{path.name}", "-o", str(path),
                    str(path.parent / f"{path.name}.c"), *link], check=True, capture_output=True)


@pytest.fixture
def environment(tmp_path):
    """A built environment's layout: a framework library that links the driver and a CUDA runtime from an
    NVIDIA wheel (found by its RUNPATH), one that links a cuBLAS nothing in the environment has, and two bundled
    libraries, one needing the other by a name only the environment has."""
    venv = tmp_path / "venv"
    packages = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    runtime = packages / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.99"
    _library(runtime, "int cudaRuntimeGetVersion(int *v) { *v = 99; return 0; }\n")
    driver = tmp_path / "node" / "libcuda.so.1"  # only to link against: the node's, not the environment's
    _library(driver, "int cuInit(unsigned f) { return 0; }\nint cuDeviceGetCount(int *n) { *n = 1; return 0; }\n")
    blas = tmp_path / "node" / "libcublas.so.99"
    _library(blas, "int cublasCreate_v2(void *h) { return 0; }\n")
    _library(packages / "framework" / "libframework.so",
             "#include <unistd.h>\n"
             "int cuInit(unsigned); int cuDeviceGetCount(int *); int cudaRuntimeGetVersion(int *);\n"
             "int gpus(void) { int n = 0; cuInit(0); cuDeviceGetCount(&n); int v; cudaRuntimeGetVersion(&v);\n"
             "  return n + (getpid() < 0) * v; }\n",
             f"-L{driver.parent}", "-l:libcuda.so.1", f"-L{runtime.parent}", "-l:libcudart.so.99",
             "-Wl,--enable-new-dtags,-rpath,$ORIGIN/../nvidia/cuda_runtime/lib")
    _library(packages / "framework" / "libblas_user.so",
             "int cublasCreate_v2(void *); int f(void) { return cublasCreate_v2(0); }\n",
             f"-L{blas.parent}", "-l:libcublas.so.99")
    inner = packages / "framework.libs" / "libinner-1a2b.so"  # auditwheel's: found by name once loaded
    _library(inner, "int inner(void) { return 1; }\n")
    _library(packages / "framework.libs" / "libouter-3c4d.so", "int inner(void); int outer(void) { return inner(); }\n",
             f"-L{inner.parent}", f"-l:{inner.name}")
    return venv


def test_a_cuda_library_the_environment_lacks_fails_the_check_and_the_driver_does_not(environment):
    check = gpu_envs.inspect_environment("framework", environment, {"status": "ok"})
    assert check.objects == 5
    assert check.missing == {"framework/libblas_user.so": ["libcublas.so.99"]}
    assert not check.cuda_from_node and not check.passed
    assert check.verdict() == "FAIL: framework/libblas_user.so needs libcublas.so.99, found nowhere"
    assert "libc.so.6" in check.from_node and check.node_provides() == []  # a manylinux2014 system's


def test_the_stand_in_driver_lets_a_library_linked_to_the_driver_load_and_find_no_gpu(environment, tmp_path):
    objects = gpu_envs.shared_objects(environment)
    assert gpu_envs.stand_in_driver(objects, tmp_path / "driver") == [tmp_path / "driver" / "libcuda.so.1"]
    framework = next(path for path in objects if path.name == "libframework.so")
    found = subprocess.run([sys.executable, "-c", f"import ctypes; print(ctypes.CDLL('{framework}').gpus())"],
                           env={"LD_LIBRARY_PATH": str(tmp_path / "driver")}, capture_output=True, text=True,
                           check=True)
    assert found.stdout.strip() == "0"  # cuInit answered CUDA_ERROR_NO_DEVICE; no device counted
    assert gpu_envs.stand_in_driver([path for path in objects if path != framework], tmp_path / "none") == []


def test_the_table_says_which_reference_gpus_each_frameworks_main_gpu_library_runs_on():
    check = gpu_envs.EnvironmentCheck(
        "torch-like", {"status": "ok", "framework_build": "cuda 13.0"},
        gpu_code={"torch/lib/libtorch_cuda.so": ("sm_75", "sm_80", "sm_90", "compute_90"),
                  "torch/lib/libflash.so": ("sm_80",),  # kernels only some GPUs dispatch to: not the build's floor
                  "torch/lib/libcudnn_bundled.so.9": ("sm_50",),  # NVIDIA's, bundled: not the framework's own
                  "nvidia/cudnn/lib/libcudnn.so": ("sm_50", "compute_52")},
        fatbin_bytes={"torch/lib/libtorch_cuda.so": 10**9, "torch/lib/libflash.so": 10**6,
                      "torch/lib/libcudnn_bundled.so.9": 10**10, "nvidia/cudnn/lib/libcudnn.so": 10**8})
    assert check.main_gpu_libraries() == {"torch": "torch/lib/libtorch_cuda.so"}
    runs_on = check.runs_on()["torch"]
    assert (runs_on["Tesla P100"], runs_on["Tesla T4"], runs_on["H100"]) == ("no code", "kernels", "kernels")
    assert runs_on["B200"] == "PTX, JIT-compiled"
    table = gpu_envs.markdown([check])
    assert "| torch-like | ok | cuda 13.0 | - |" in table
    assert ("| torch-like | torch/lib/libtorch_cuda.so: sm_75 sm_80 sm_90 compute_90 | **no** | **no** | **no** | "
            "**no** | yes | yes | yes | yes | PTX (JIT) |") in table


def test_the_tables_are_written_again_from_a_runs_json(tmp_path):
    """``gpu_envs_check.py --tables-only``: the same tables from the checks a run kept, installing nothing."""
    import json

    from ...conftest import ROOT

    check = gpu_envs.EnvironmentCheck("tiny.cuda", {"status": "ok", "framework_build": "cuda 12"}, objects=3,
                                      gpu_code={"tiny/libtiny.so": ("sm_80",)}, fatbin_bytes={"tiny/libtiny.so": 10})
    (tmp_path / "gpu-envs.json").write_text(json.dumps([{**vars(check), "verdict": check.verdict()}]))
    subprocess.run([sys.executable, ROOT / "workflow" / "scripts" / "gpu_envs_check.py", "--tables-only", "--output",
                    tmp_path], check=True, capture_output=True, cwd=ROOT)
    assert (tmp_path / "gpu-envs.md").read_text() == gpu_envs.markdown([check])


def test_every_cuda_requirements_file_is_checked_for_the_gpus_the_workflow_builds_it_for():
    from ...conftest import ROOT

    builds = gpu_envs.cuda_builds(ROOT / "envs")
    assert gpu_envs.CudaBuild("mxnet", "mxnet.cuda.requirements.txt") in builds
    assert gpu_envs.CudaBuild("pytorch", "pytorch.cuda-sm50.requirements.txt", (50,)) in builds
    files = (ROOT / "envs").glob("*.cuda*.requirements.txt")
    assert {build.requirements for build in builds} == {path.name for path in files}


def test_a_cuda_library_only_the_node_has_fails_the_check_and_one_the_environment_has_does_not(tmp_path):
    """Both found by the loader outside the environment (the needing library's RUNPATH names the node's directory,
    as /usr/local/cuda on ldconfig's path would): the environment's own is used once its framework loaded it."""
    venv = tmp_path / "venv"
    packages = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    node = tmp_path / "node"
    for library, function in (("libcufft.so.99", "f_cufft"), ("libcudart.so.99", "f_cudart")):
        _library(node / library, f"int {function}(void) {{ return 0; }}\n")
    _library(packages / "nvidia" / "cuda_runtime" / "lib" / "libcudart.so.99", "int f_cudart(void) { return 0; }\n")
    _library(packages / "framework" / "libframework.so",
             "int f_cufft(void); int f_cudart(void); int g(void) { return f_cufft() + f_cudart(); }\n",
             f"-L{node}", "-l:libcufft.so.99", "-l:libcudart.so.99", f"-Wl,--enable-new-dtags,-rpath,{node}")
    check = gpu_envs.inspect_environment("framework", venv, {"status": "ok"})
    assert check.cuda_from_node == {"libcufft.so.99": f"{node / 'libcufft.so.99'}, for framework/libframework.so"}
    assert check.verdict().startswith("FAIL: libcufft.so.99 from the node")


def test_cudas_libraries_are_told_from_the_nodes_by_name():
    cuda = ["libcudart.so.13", "libcublasLt.so.13", "libcudnn_ops.so.9", "libcusparseLt.so.0", "libcufile.so.0",
            "libnvrtc.so.12", "libnvJitLink.so.13", "libnvToolsExt.so.1", "libnccl.so.2"]
    node = ["libcurl.so.4", "libcups.so.2", "libc.so.6", "libz.so.1"]
    assert [name for name in cuda + node if gpu_envs.CUDA_LIBRARY.match(name)] == cuda


def test_every_elf_shared_object_counts_whatever_its_version_says(tmp_path):
    packages = tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "caffe"
    packages.mkdir(parents=True)
    (tmp_path / "f.c").write_text("int f(void) { return 1; }\n")
    for name in ("libcaffe.so.1.0.0-rc3", "_caffe.so"):
        subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(packages / name), str(tmp_path / "f.c")], check=True)
    (packages / "notes.so.txt").write_text("not a library\n")
    assert sorted(path.name for path in gpu_envs.shared_objects(tmp_path / "venv")) == [
        "_caffe.so", "libcaffe.so.1.0.0-rc3"]
