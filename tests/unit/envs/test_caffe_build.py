"""Building Caffe from source: what is checked before anything is compiled or used."""
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy
import pytest
from dlbench.envs import caffe_build


def test_a_machine_without_the_build_tools_is_told_which_packages_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no g++, make or protoc to be found
    missing = caffe_build.missing_prerequisites()
    assert missing == ["g++ (g++)", "make (make)", "protoc (protobuf-compiler)"]
    status = caffe_build.build(tmp_path / "venv", 2, log=None)
    assert status["status"] == "unavailable"
    assert "protoc (protobuf-compiler)" in status["reason"] and "make system-packages" in status["reason"]


def test_a_source_archive_with_the_wrong_checksum_is_never_unpacked(monkeypatch, tmp_path):
    def fake_download(command, log, cwd=None):  # pip download puts a tampered archive in --dest
        destination = Path(command[command.index("--dest") + 1])
        inner = tmp_path / "Makefile"
        inner.write_text("all:\n")
        with tarfile.open(destination / caffe_build.ARCHIVE, "w:gz") as tar:
            tar.add(inner, arcname="brocolli-caffe-9.0.2/Makefile")

    monkeypatch.setattr(caffe_build, "_run", fake_download)
    with pytest.raises(RuntimeError, match="sha256 .* expected c6410cc6"):
        caffe_build.fetch_source(Path("python"), tmp_path / "src", log=None)
    assert not (tmp_path / "src").exists()


def test_the_generated_makefile_config_points_at_the_environments_python():
    config = caffe_build.makefile_config(Path(sys.executable))
    assert "PYTHON_INCLUDE := " in config and numpy.get_include() in config
    assert f"PYTHON_LIBRARIES := boost_python{sys.version_info.major}{sys.version_info.minor}\n" in config
    assert "CPU_ONLY := 1" in config and "USE_LMDB := 1" in config


DEVICE_QUERY = """  LOG(INFO) << "Maximum dimension of grid:     "
      << prop.maxGridSize[0];
  LOG(INFO) << "Clock rate:                    " << prop.clockRate;
  LOG(INFO) << "Total constant memory:         " << prop.totalConstMem;
  LOG(INFO) << "Concurrent copy and execution: "
      << (prop.deviceOverlap ? "Yes" : "No");
  LOG(INFO) << "Number of multiprocessors:     " << prop.multiProcessorCount;
  LOG(INFO) << "Kernel execution timeout:      "
      << (prop.kernelExecTimeoutEnabled ? "Yes" : "No");
  return;
"""
HEADER = """class HardSwishLayer : public NeuronLayer<Dtype> {
 protected:
  virtual void Forward_cpu(const vector<Blob<Dtype>*>& bottom,
      const vector<Blob<Dtype>*>& top);
  virtual void Forward_gpu(const vector<Blob<Dtype>*>& bottom,
      const vector<Blob<Dtype>*>& top);
  virtual void Backward_gpu(const vector<Blob<Dtype>*>& top,
      const vector<bool>& propagate_down, const vector<Blob<Dtype>*>& bottom);
  virtual void Backward_cpu(const vector<Blob<Dtype>*>& top,
      const vector<bool>& propagate_down, const vector<Blob<Dtype>*>& bottom) {}
};
"""


# tools/caffe.cpp's train() as the tree has it: Caffe 1.0's NCCL class, which its rc3 library does not have
TOOL_TRAINING = """  LOG(INFO) << "Starting Optimization";
  if (gpus.size() > 1) {
#ifdef USE_NCCL
    caffe::NCCL<float> nccl(solver);
    nccl.Run(gpus, FLAGS_snapshot.size() > 0 ? FLAGS_snapshot.c_str() : NULL);
#else
    LOG(FATAL) << "Multi-GPU execution not available - rebuild with USE_NCCL";
#endif
  } else {
    solver->Solve();
  }
"""


def _tree(root: Path, kernels: str | None) -> Path:
    (root / "tools").mkdir(parents=True)
    (root / "tools" / "caffe.cpp").write_text(TOOL_TRAINING)
    (root / "src" / "caffe" / "layers").mkdir(parents=True)
    (root / "include" / "caffe" / "layers").mkdir(parents=True)
    (root / "src" / "caffe" / "common.cpp").write_text(DEVICE_QUERY)
    (root / "include" / "caffe" / "layers" / "hardswish_layer.hpp").write_text(HEADER)
    if kernels is not None:
        (root / "src" / "caffe" / "layers" / "hardswish_layer.cu").write_text(kernels)
    return root


def test_for_cuda_13_the_removed_device_properties_go_and_gpu_methods_without_kernels_run_the_cpu_code(tmp_path):
    tree = _tree(tmp_path, "void HardSwishLayer<Dtype>::Forward_gpu(const vector<Blob<Dtype>*>& bottom) {}")
    caffe_build.patch_for_cuda(tree)
    query = (tree / "src" / "caffe" / "common.cpp").read_text()
    assert "prop." in query and not re.search(r"clockRate|deviceOverlap|kernelExecTimeoutEnabled", query)
    assert "multiProcessorCount;\n  return;" in query
    header = (tree / "include" / "caffe" / "layers" / "hardswish_layer.hpp").read_text()
    # the .cu defines only Forward_gpu: its declaration stays, Backward_gpu runs Backward_cpu
    assert ("virtual void Forward_gpu(const vector<Blob<Dtype>*>& bottom,\n"
            "      const vector<Blob<Dtype>*>& top);") in header
    assert ("virtual void Backward_gpu(const vector<Blob<Dtype>*>& top, const vector<bool>& propagate_down,\n"
            "      const vector<Blob<Dtype>*>& bottom) {\n"
            "    Backward_cpu(top, propagate_down, bottom);\n  }") in header
    assert "Backward_cpu(const vector<Blob<Dtype>*>& top,\n      const vector<bool>& propagate_down, " in header
    # caffe train --gpu 0,1 runs the library's own multi-GPU training, P2PSync, not a fatal error
    assert (tree / "tools" / "caffe.cpp").read_text() == TOOL_TRAINING.replace(
        TOOL_TRAINING[TOOL_TRAINING.index("#ifdef"):TOOL_TRAINING.index("  } else")],
        "    caffe::P2PSync<float> sync(solver, NULL, solver->param());\n    sync.Run(gpus);\n")


def test_a_layer_without_a_cu_file_runs_its_cpu_code_and_a_changed_tree_is_not_patched_blindly(tmp_path):
    tree = _tree(tmp_path / "tree", None)
    caffe_build.patch_for_cuda(tree)
    header = (tree / "include" / "caffe" / "layers" / "hardswish_layer.hpp").read_text()
    assert "{\n    Forward_cpu(bottom, top);\n  }" in header and "Backward_cpu(top, propagate_down, bottom);" in header
    with pytest.raises(RuntimeError, match="0 of DeviceQuery's 3 lines"):
        caffe_build.patch_for_cuda(tree)  # already patched: the lines are gone


@pytest.mark.skipif(not shutil.which("nvcc") and not Path(caffe_build.NVCC_PLACES[0]).exists(), reason="no nvcc")
def test_a_patched_layer_compiles_with_nvcc_and_its_gpu_method_runs_the_cpu_one(tmp_path):
    """The patched header, its class instantiated in a .cu file as Caffe's INSTANTIATE_LAYER_GPU_FUNCS does (the
    ProposalLayer case), compiled and run on the host."""
    tree = _tree(tmp_path / "tree", None)
    caffe_build.patch_for_cuda(tree)
    header = (tree / "include" / "caffe" / "layers" / "hardswish_layer.hpp").read_text()
    (tmp_path / "layer.cu").write_text("""#include <cstdio>
#include <vector>
using std::vector;
template <typename Dtype> struct Blob {};
template <typename Dtype> class NeuronLayer { public: virtual ~NeuronLayer() {} };
template <typename Dtype>
""" + header.replace("{}\n};", "{ std::puts(\"backward on the CPU\"); }\n public:\n  void run() {\n"
                          "    vector<Blob<Dtype>*> blobs; vector<bool> down;\n"
                          "    Backward_gpu(blobs, down, blobs);\n  }\n};") + """
template <typename Dtype> void HardSwishLayer<Dtype>::Forward_cpu(const vector<Blob<Dtype>*>&,
                                                                  const vector<Blob<Dtype>*>&) {}
template class HardSwishLayer<float>;
int main() { HardSwishLayer<float>().run(); }
""")
    nvcc = caffe_build.find_nvcc()[0] or shutil.which("nvcc")
    subprocess.run([str(nvcc), "-o", str(tmp_path / "layer"), str(tmp_path / "layer.cu")], check=True)
    assert subprocess.run([tmp_path / "layer"], capture_output=True, text=True, check=True).stdout == \
        "backward on the CPU\n"


def test_a_cuda_makefile_config_compiles_for_the_listed_gpus_without_cudnn_against_the_wheels(tmp_path):
    toolkit = caffe_build.CudaToolkit(Path("/opt/cuda/bin/nvcc"), tmp_path / "include", tmp_path / "lib")
    config = caffe_build.makefile_config(Path(sys.executable), toolkit)
    assert "CPU_ONLY" not in config and "USE_CUDNN := 0\n" in config and "CUDA_DIR := /opt/cuda\n" in config
    assert ("CUDA_ARCH := -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 "
            "-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90\n") in config
    assert f"LIBRARY_DIRS := {tmp_path / 'lib'} " in config and f" {tmp_path / 'include'}\n" in config


def _environment_with_cuda_wheels(root: Path) -> Path:
    """A virtualenv (numpy from this interpreter's) whose nvidia/cu13 wheels hold the libraries Caffe links."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    packages = next(root.glob("lib/python3*/site-packages"))
    (packages / "numpy-path.pth").write_text(f"{Path(numpy.__file__).parent.parent}\n")
    for library in caffe_build.cuda_wheels.PRELOADED["caffe"]:
        (packages / "nvidia" / library).parent.mkdir(parents=True, exist_ok=True)
        (packages / "nvidia" / library).write_bytes(b"")
    return root


@pytest.mark.skipif(bool(caffe_build.missing_prerequisites()), reason="Caffe's build tools are not installed")
def test_an_environment_with_cudas_wheels_is_built_with_cuda_or_told_which_nvcc_it_needs(tmp_path, monkeypatch):
    environment = _environment_with_cuda_wheels(tmp_path / "venv")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "nvcc").write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    (tools / "nvcc").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    status = caffe_build.build(environment, 2, io.StringIO())
    assert status == {"status": "unavailable", "reason": "building Caffe with CUDA needs nvcc of CUDA 13, the runtime "
                      f"of the environment's CUDA wheels ({tools / 'nvcc'} is release 12.4)"}
    (tools / "nvcc").unlink()
    monkeypatch.setenv("PATH", str(tools) + ":" + ":".join(
        d for d in os.environ["PATH"].split(":") if not Path(d, "nvcc").exists()))
    monkeypatch.setattr(caffe_build, "NVCC_PLACES", (str(tmp_path / "cuda" / "bin" / "nvcc"),))
    assert caffe_build.build(environment, 2, io.StringIO())["reason"] == (
        "building Caffe with CUDA needs nvcc of CUDA 13 (NVIDIA's CUDA toolkit; neither on PATH nor in "
        f"{tmp_path / 'cuda' / 'bin' / 'nvcc'})")
