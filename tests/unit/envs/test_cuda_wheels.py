"""MXNet's CUDA build in an environment that brings CUDA 11's libraries itself (PyPI's nvidia-*-cu11 wheels):
dlbench.envs.cuda_wheels loads them before MXNet, so that its library's needs by name are met without the node's.
Shown with libraries compiled here in the wheels' layout: a "framework" library that needs two of them, which
need each other, by their sonames, none of them on the loader's path."""
import re
import shutil
import subprocess
import sys

import pytest
from dlbench.envs import cuda_wheels

from ...conftest import ROOT

PROGRAM = """
import ctypes, sys
from pathlib import Path
from dlbench.envs import cuda_wheels
wheels, framework = Path(sys.argv[1]), sys.argv[2]
if sys.argv[3] == "preload":
    print([path.name for path in cuda_wheels.preload(("runtime/lib/libfakert.so.11", "blas/lib/libfakeblas.so.11",
                                                      "absent/lib/libnone.so.1"), wheels)])
print(ctypes.CDLL(framework).framework_answer())
"""


def _library(path, soname: str, source: str, *needed) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "source.c").write_text(source)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(path), f"-Wl,-soname,{soname}", str(path.parent / "source.c"),
                    *(str(library) for library in needed)], check=True)


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (make test's Debian packages bring it)")
def test_the_wheels_libraries_are_loaded_in_order_before_the_framework_that_needs_them(tmp_path):
    wheels = tmp_path / "site-packages" / "nvidia"
    runtime, blas = wheels / "runtime/lib/libfakert.so.11", wheels / "blas/lib/libfakeblas.so.11"
    _library(runtime, "libfakert.so.11", "int runtime_version(void) { return 11; }")
    _library(blas, "libfakeblas.so.11", "int runtime_version(void);\nint blas(void) { return runtime_version() * 2; }",
             runtime)
    framework = tmp_path / "libframework.so"
    _library(framework, "libframework.so", "int blas(void);\nint framework_answer(void) { return blas() + 20; }", blas)
    environment = {"PYTHONPATH": str(ROOT / "workflow" / "scripts")}
    loaded = subprocess.run([sys.executable, "-c", PROGRAM, str(wheels), str(framework), "preload"], env=environment,
                            capture_output=True, text=True, check=False)
    assert loaded.stdout.split() == ["['libfakert.so.11',", "'libfakeblas.so.11']", "42"], loaded.stderr
    # without them loaded first, the framework's library cannot be loaded: its needs are not on the loader's path
    alone = subprocess.run([sys.executable, "-c", PROGRAM, str(wheels), str(framework), "none"], env=environment,
                           capture_output=True, text=True, check=False)
    assert alone.returncode != 0 and "libfakeblas.so.11: cannot open shared object file" in alone.stderr


def test_every_library_preloaded_for_mxnet_comes_from_a_wheel_its_cuda_environment_pins():
    pinned = set(re.findall(r"^(nvidia-[a-z-]+-cu11)==", (ROOT / "envs" / "mxnet.cuda.requirements.txt").read_text(),
                            re.MULTILINE))
    needed = {f"nvidia-{library.split('/')[0].replace('_', '-')}-cu11" for library in cuda_wheels.CUDA_11}
    assert needed == pinned
