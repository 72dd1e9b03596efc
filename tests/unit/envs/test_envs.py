"""Which build an environment gets: CUDA where nvidia-smi lists GPUs (a fake one here), else CPU; and
what the framework itself says it is."""
import os
import sys
from pathlib import Path

import pytest
from dlbench import envs
from dlbench.registry import ENVIRONMENTS

from ...conftest import ROOT

ENVS = ROOT / "envs"
LISTING = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-3f1c0000-0000-0000-0000-000000000000)\n"
           "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-3f1c0000-0000-0000-0000-000000000001)\n")


@pytest.fixture
def nvidia_smi(tmp_path, monkeypatch):
    """An nvidia-smi on PATH that prints ``output`` and exits with ``code``."""
    def install(output: str, code: int = 0) -> None:
        (tmp_path / "listing").write_text(output)
        script = tmp_path / "nvidia-smi"
        script.write_text(f"#!/bin/sh\ncat {tmp_path / 'listing'}\nexit {code}\n")
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    return install


def test_a_node_with_gpus_gets_the_cuda_build_of_every_environment_that_has_one(nvidia_smi):
    nvidia_smi(LISTING)
    gpus = envs.node_gpus()
    assert len(gpus) == 2
    for environment in sorted(set(ENVIRONMENTS.values())):
        chosen, why = envs.choose_requirements(ENVS / f"{environment}.requirements.txt", gpus)
        conda, _ = envs.choose_requirements(ENVS / f"{environment}.yaml", gpus)  # snakemake --use-conda's
        if f"{environment}.requirements.txt" in envs.NO_CUDA_VARIANT:  # a CPU build, saying why
            assert chosen.name == f"{environment}.requirements.txt" and conda.name == f"{environment}.yaml"
            assert why == f"CPU build: {envs.NO_CUDA_VARIANT[chosen.name]}"
            continue
        assert chosen == ENVS / f"{environment}.cuda.requirements.txt" and chosen.exists()
        assert why == f"CUDA {envs.BuildFacts.of(chosen).cuda} build ({envs.BuildFacts.of(chosen).words()}): " \
                      "nvidia-smi lists 2 GPU(s)"
        if f"{environment}.yaml" in envs.NO_CUDA_VARIANT:
            assert conda.name == f"{environment}.yaml"
        else:
            assert conda == ENVS / f"{environment}.cuda.yaml" and conda.exists()


@pytest.mark.parametrize("output,code", [
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", 9),
    ("No devices were found\n", 6),
])
def test_a_node_whose_nvidia_smi_lists_no_gpu_gets_cpu_builds(nvidia_smi, output, code):
    nvidia_smi(output, code)
    assert envs.node_gpus() == []
    chosen, why = envs.choose_requirements(ENVS / "tensorflow.requirements.txt", envs.node_gpus())
    assert chosen.name == "tensorflow.requirements.txt" and why == "CPU build: nvidia-smi lists no GPU on this node"


def test_without_nvidia_smi_there_are_no_gpus(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert envs.node_gpus() == []


def test_every_environment_has_a_cuda_variant_or_says_why_not():
    for environment in set(ENVIRONMENTS.values()):
        for suffix in (".requirements.txt", ".yaml"):
            has_cuda = (ENVS / f"{environment}.cuda{suffix}").exists()
            assert has_cuda != (f"{environment}{suffix}" in envs.NO_CUDA_VARIANT), (environment, suffix)


def test_pytorchs_cuda_requirements_pin_the_cpu_files_packages_but_onnx_runtimes_cuda_one():
    def pins(name):
        lines = (ENVS / name).read_text().splitlines()
        return {line.split("#")[0].strip().replace("onnxruntime-gpu[cuda,cudnn]", "onnxruntime").split(",!=")[0]
                for line in lines if line and not line.startswith("#")}
    assert pins("pytorch.cuda.requirements.txt") == pins("pytorch.requirements.txt")
    assert "onnxruntime-gpu[cuda,cudnn]==" in (ENVS / "pytorch.cuda.requirements.txt").read_text()


def test_a_cuda_file_never_takes_a_local_wheel_directorys_cpu_build_of_torch():
    """A machine's pip settings may offer torch's +cpu wheel (this one's /opt/wheels does): a CUDA file's pin excludes
    it, so that the build and the CI check, with or without those settings, get a CUDA build."""
    from packaging.requirements import Requirement

    for path in [ENVS / "pytorch.cuda.requirements.txt",
                 *(ENVS / name for name in envs.OLDER_GPU_BUILDS["pytorch"])]:
        torch = next(Requirement(line.split("#")[0]) for line in path.read_text().splitlines()
                     if line.startswith("torch=="))
        pinned = str(torch.specifier).split("==")[1].split(",")[0]
        assert not torch.specifier.contains(f"{pinned}+cpu") and torch.specifier.contains(pinned), path.name


def test_the_older_gpu_build_pins_the_cuda_files_packages_but_torch_and_onnx_runtime():
    def pins(name):
        lines = (ENVS / name).read_text().splitlines()
        return {line.split("#")[0].strip() for line in lines if line and not line.startswith("#")}
    for name in envs.OLDER_GPU_BUILDS["pytorch"]:
        differ = pins(name) ^ pins("pytorch.cuda.requirements.txt")
        assert {pin.split("==")[0] for pin in differ} == {"torch", "onnxruntime-gpu[cuda,cudnn]"}, name


@pytest.fixture
def node(tmp_path, monkeypatch):
    """An nvidia-smi on PATH for a node with GPUs of the given compute capabilities (``6.0``)."""
    def install(*capabilities: str, driver: str = "580.65.06") -> None:
        listing = "".join(f"GPU {i}: Tesla P100-PCIE-16GB (UUID: GPU-{i})\n" for i in range(len(capabilities)))
        (tmp_path / "listing").write_text(listing)
        (tmp_path / "capabilities").write_text("".join(f"{c}\n" for c in capabilities))
        (tmp_path / "driver").write_text("".join(f"{driver}\n" for _ in capabilities))
        script = tmp_path / "nvidia-smi"
        script.write_text(f'#!/bin/sh\ncase "$1" in -L) cat {tmp_path / "listing"};; '
                          f'--query-gpu=compute_cap) cat {tmp_path / "capabilities"};; '
                          f'--query-gpu=driver_version) cat {tmp_path / "driver"};; *) exit 2;; esac\n')
        script.chmod(0o755)
        monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    return install


@pytest.mark.parametrize("capabilities,driver,chosen", [
    (("6.0",), "580.65.06", "pytorch.cuda-sm50.requirements.txt"),  # the thesis's P100
    (("9.0", "7.0"), "580.65.06", "pytorch.cuda-sm50.requirements.txt"),  # its oldest GPU decides
    (("9.0",), "580.65.06", "pytorch.cuda.requirements.txt"),
    (("9.0",), "570.133.20", "pytorch.cuda-sm50.requirements.txt"),  # CUDA 13 needs driver 580: CUDA 12.6 runs
])
def test_a_node_gets_the_first_cuda_build_that_serves_its_gpus_and_its_driver_runs(node, capabilities, driver,
                                                                                    chosen):
    node(*capabilities, driver=driver)
    assert envs.node_compute_capabilities() == [round(10 * float(c)) for c in capabilities]
    assert envs.node_driver() == driver
    found, why = envs.choose_requirements(ENVS / "pytorch.requirements.txt", envs.node_gpus(),
                                          envs.node_compute_capabilities(), envs.node_driver())
    assert found == ENVS / chosen and found.exists()
    assert why.startswith(f"CUDA {envs.BuildFacts.of(found).cuda} build (") and why.endswith(f", driver {driver}")
    conda, _ = envs.choose_requirements(ENVS / "pytorch.yaml", envs.node_gpus(), envs.node_compute_capabilities())
    assert conda.name == "pytorch.cuda.yaml"  # made before any job: the CUDA file's build


@pytest.mark.parametrize("capabilities,driver,why", [
    (("3.5",), "470.256.02", (
        "nvidia-smi lists 1 GPU(s) (sm_35), driver 470.256.02; pytorch.cuda.requirements.txt (CUDA 13.0, driver "
        "580.65.06 or newer, sm_75 to sm_121): the node's driver 470.256.02 is older; "
        "pytorch.cuda-sm50.requirements.txt (CUDA 12.6, driver 525.60.13 or newer, sm_50 to sm_90): the node's "
        "driver 470.256.02 is older")),  # a K20m
    (("10.0",), "570.133.20", (
        "nvidia-smi lists 1 GPU(s) (sm_100), driver 570.133.20; pytorch.cuda.requirements.txt (CUDA 13.0, driver "
        "580.65.06 or newer, sm_75 to sm_121): the node's driver 570.133.20 is older; "
        "pytorch.cuda-sm50.requirements.txt (CUDA 12.6, driver 525.60.13 or newer, sm_50 to sm_90): no kernels "
        "for sm_100")),  # a B200, driver too old
])
def test_a_node_no_cuda_build_serves_gets_the_cpu_build_and_its_gpu_runs_say_why(node, tmp_path, capabilities,
                                                                                   driver, why):
    node(*capabilities, driver=driver)
    found, said = envs.choose_requirements(ENVS / "pytorch.requirements.txt", envs.node_gpus(),
                                           envs.node_compute_capabilities(), envs.node_driver())
    assert found == ENVS / "pytorch.requirements.txt" and said == f"CPU build, no CUDA build runs here: {why}"
    status = {"status": "ok", "reason": "", "python": sys.executable, "requirements": found.name, "choice": said,
              "no_gpu_build": said}
    assert envs.cannot_run(status, gpus=1) == f"pytorch's environment is the CPU build, no CUDA build runs here: {why}"
    assert envs.cannot_run(status, gpus=0) is None  # its CPU runs run


def test_every_cuda_requirements_file_says_what_its_build_needs_and_serves():
    for path in sorted(ENVS.glob("*.requirements.txt")):
        facts = envs.BuildFacts.of(path)
        assert (facts is not None) == (".cuda" in path.name), path.name
        if facts:
            assert int(facts.driver.split(".")[0]) >= 384 and facts.low >= 30  # CUDA 9 (the thesis's) at the oldest
            assert facts.high is None or facts.high > facts.low
    assert [envs.BuildFacts.of(ENVS / name).cuda for name in envs.OLDER_GPU_BUILDS["pytorch"]] == ["12.6"]


def test_a_framework_pip_gave_another_build_than_its_file_asks_for_fails_the_environment_naming_both():
    cuda = ENVS / "pytorch.cuda.requirements.txt"
    got = {"framework_build": "cpu", "framework_version": "pytorch 2.13.0+cpu"}
    assert envs.wrong_build(cuda, got) == (
        "pytorch.cuda.requirements.txt asks for a CUDA 13.0 build; pip installed pytorch 2.13.0+cpu, a cpu build (the "
        "machine's pip settings, as a local wheel directory, can offer another build than PyPI's)")
    assert envs.wrong_build(cuda, {**got, "framework_build": "cuda 12.8"}).startswith(
        "pytorch.cuda.requirements.txt asks for a CUDA 13.0 build; pip installed pytorch 2.13.0+cpu, a cuda 12.8 build")
    assert envs.wrong_build(cuda, {**got, "framework_build": "cuda 13.0"}) is None
    assert envs.wrong_build(ENVS / "pytorch.requirements.txt", got) is None  # a CPU file: either build runs CPUs


def test_the_framework_says_which_build_it_is():
    import torch

    assert envs.framework_build({"python": sys.executable}, "pytorch") == {  # asked in a process of its own
        "framework_build": f"cuda {torch.version.cuda}" if torch.version.cuda else "cpu",
        "framework_version": f"pytorch {torch.__version__}"}
    missing = envs.framework_build({"python": sys.executable}, "mxnet")  # not in the tests' environment
    assert missing["status"] == "unavailable"
    assert missing["reason"].startswith("mxnet cannot be imported in mxnet: ") and "No module named 'mxnet'" in \
        missing["reason"]


def _wheel(directory, name: str, version: str) -> None:
    """A pure-Python wheel holding only its metadata: all that pip's resolver reads."""
    import zipfile

    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(directory / f"{name}-{version}-py3-none-any.whl", "w") as wheel:
        wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        wheel.writestr(f"{info}/WHEEL",
                       "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n")

        wheel.writestr(f"{info}/RECORD", "")


def test_a_requirements_file_that_does_not_resolve_is_named_with_pips_reason(tmp_path):
    """As envs/pytorch.cuda.requirements.txt once did: a pin the registry does not have (a local one here)."""
    index = tmp_path / "index"
    index.mkdir()
    _wheel(index, "dlbench_tiny", "1.31.1")
    local = ["--no-index", "--find-links", str(index)]
    (tmp_path / "fine.requirements.txt").write_text("dlbench_tiny==1.31.1\n")
    (tmp_path / "broken.requirements.txt").write_text("dlbench_tiny==1.32.0\n")
    fine = envs.resolve(tmp_path / "fine.requirements.txt", local)
    assert fine["status"] == "ok" and fine["packages"] == {"dlbench_tiny": "1.31.1"}
    broken = envs.resolve(tmp_path / "broken.requirements.txt", local)
    assert broken["status"] == "failed"
    assert "No matching distribution found for dlbench_tiny==1.32.0" in broken["reason"]
    assert "1.31.1" in broken["reason"]  # the versions there are


def test_a_shared_environment_is_built_once_for_what_it_is_built_from_and_a_stopped_build_again(tmp_path,
                                                                                                 monkeypatch):
    """Two workflows asking for the same environment under one root get one build; a changed requirements file
    builds a second beside it; a build whose status was never written (a stopped one) is removed and made again."""
    monkeypatch.setattr(envs, "framework_build", lambda status, environment: {"framework_build": "cpu"})
    built = []

    def build_venv(requirements, venv_dir, log, base_python=None, after_install=None):  # pip's part, in a second
        built.append(venv_dir)
        (venv_dir / "bin").mkdir(parents=True)
        (venv_dir / "bin" / "python").write_text(requirements.read_text())
        return {"status": "ok", "python": str(venv_dir / "bin" / "python"), "reason": "", "packages": []}
    monkeypatch.setattr(envs, "build_venv", build_venv)
    requirements = tmp_path / "pytorch.requirements.txt"
    requirements.write_text("# nothing to install\n")
    root = tmp_path / "shared"

    def build(checkout: str) -> tuple[dict, str]:
        with open(tmp_path / f"{checkout}.log", "w+") as log:
            status = envs.build_environment(requirements, tmp_path / checkout / ".venvs" / "pytorch", 1, log, gpus=[],
                                            shared_root=root)
            log.seek(0)
            return status, log.read()

    first, said = build("one")
    assert first["status"] == "ok" and "built before" not in said
    venv = first["python"].removesuffix("/bin/python")
    assert venv.startswith(f"{root}/pytorch-") and (Path(venv) / envs.SHARED_STATUS).exists()
    again, said = build("two")
    assert again == first and f"built before from the same files: {venv}" in said
    (Path(venv) / envs.SHARED_STATUS).unlink()  # as a build killed before its end leaves it
    (Path(venv) / "half-made").write_text("")
    rebuilt, said = build("three")
    assert rebuilt == first and f"removing a build that was stopped: {venv}" in said
    assert not (Path(venv) / "half-made").exists()
    requirements.write_text("# nothing to install, said otherwise\n")
    changed, _ = build("four")
    assert changed["python"] != first["python"] and Path(changed["python"]).exists() and Path(first["python"]).exists()
    assert len(built) == 3  # the first, the stopped one again, the changed one


def test_an_environment_is_named_by_its_files_with_the_dots_of_a_release():
    assert envs.environment_of(ENVS / "cntk-2.5.cuda.requirements.txt") == "cntk-2.5"
    assert envs.environment_of(ENVS / "cntk-2.5.yaml") == "cntk-2.5"
    assert envs.environment_of(ENVS / "pytorch.cuda-sm50.requirements.txt") == "pytorch"
    assert envs.environment_of(ENVS / "mxnet.requirements.txt") == "mxnet"
