"""Per-framework pip virtualenvs, built by the workflow where conda is not used.

Building never fails the workflow: a framework whose environment cannot be built here gets a
status file saying why, and its runs are recorded as ``unavailable: <reason>``. On a node where
``nvidia-smi`` lists GPUs an environment is built from the first of its CUDA requirements files whose build the
node's driver and GPUs can run (:func:`choose_requirements`), and the status file says which build the framework
turned out to be (``cpu`` or ``cuda <version>``, asked of the framework itself).
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import distributions
from pathlib import Path

from .. import files, lifeline, paths
from ..registry import REGISTRY
from . import caffe_build, cntk_setup

# Frameworks whose last release needs an older CPython than the workflow's: the runner stays on the
# workflow's Python and drives the framework in a worker process under that interpreter.
WORKER_PYTHONS = {"cntk": ("3.6", "CNTK 2.7 requires CPython 3.6 (its last wheels are cp36 only)"),
                  "cntk-2.5": ("3.6", "CNTK 2.5.1 requires CPython 3.6 (its Linux wheels are cp27, cp35 and cp36)"),
                  "mxnet-1.2": ("3.6", "MXNet 1.2.0 pins numpy below 1.15 (2018): it runs on that day's CPython"),
                  "mxnet-1.4": ("3.6", "MXNet 1.4.1 pins numpy below 1.15 (2019): it runs on that day's CPython"),
                  "mxnet-1.6": ("3.6", "MXNet 1.6.0's wheels are for CPython 3.8 at most (3.6: its worker's)"),
                  "tensorflow-1.9": ("3.6", "TensorFlow 1.9.0's wheels are for CPython 3.6 at most"),
                  "pytorch-1.0": ("3.6", "PyTorch 1.0.0's wheels are for CPython 3.7 at most (3.6: the others')")}
WORKER_PYTHON_VARIABLE = "DLBENCH_WORKER_PYTHON"  # how the monitor tells the runner that interpreter


# What makes a worker environment's framework importable after its pip install, where pip's install does not.
WORKER_SETUP = {"cntk": cntk_setup.setup, "cntk-2.5": cntk_setup.setup}


def _runs_as(python: str, version: str) -> bool:
    """A pyenv shim for a version pyenv has not selected exits with an error: only a real one counts."""
    try:
        found = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                               capture_output=True, text=True, check=False, timeout=60)
    except OSError:
        return False
    return found.returncode == 0 and found.stdout.strip() == version


def find_worker_python(environment: str) -> str:
    """``python<version>`` on PATH, else one that pyenv has installed (as on this project's machines)."""
    version, why = WORKER_PYTHONS[environment]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    candidates = [shutil.which(f"python{version}"),
                  *map(str, sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}")))]
    for python in filter(None, candidates):
        if _runs_as(python, version):
            return python
    raise LookupError(f"{why}, and this machine has none (no working python{version} on PATH or in pyenv)")


def build_venv(requirements: Path, venv_dir: Path, log, base_python: str | None = None,
               after_install: Callable[[Path], None] | None = None) -> dict:
    """The virtualenv, made with ``base_python`` where given, else with the workflow's own Python;
    ``after_install(venv_dir)`` called once pip has installed it."""
    python = venv_dir / "bin" / "python"
    try:
        if not python.exists():
            log.write(f"creating {venv_dir}\n")
            log.flush()
            if base_python:
                subprocess.run([base_python, "-m", "venv", str(venv_dir)], stdout=log, stderr=subprocess.STDOUT,
                               check=True)
            else:
                venv.EnvBuilder(with_pip=True).create(venv_dir)
        command = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-r", str(requirements)]
        log.write(" ".join(command) + "\n")
        log.flush()
        # A worker environment's pins are its release's: a machine's pip constraints, written for today's Python
        # (a cap on torch), do not apply, and the pip of a CPython 3.6 venv (18.1) lets a constraint replace a pin
        variables = {**os.environ, "PIP_CONSTRAINT": os.devnull} if base_python else None
        lifeline.run_tied(command, log, env=variables)  # pip's builds end with this job, however it ends
        if after_install:
            after_install(venv_dir)
        frozen = subprocess.run([str(python), "-m", "pip", "freeze"], capture_output=True, text=True,
                                check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError) as error:
        return {"status": "unavailable", "python": None,
                "reason": f"environment from {requirements} could not be built ({error}); "
                          "see its log"}
    return {"status": "ok", "python": str(python.absolute()), "reason": "", "packages": frozen}


# Environments whose framework is compiled from source after the pip install (with all cores).
SOURCE_BUILDS = {"caffe": caffe_build.build}


# Environment files without a CUDA variant, and why (tests/unit/envs/test_envs.py: every file has one or the other).
BETWEEN_ON_CPUS = ("a release between the thesis's and today's is measured on CPUs so far: its CUDA build (PyPI's "
                   "mxnet-cu100 and mxnet-cu101, tensorflow[and-cuda]) is not wired, and its GPU runs are unavailable")
NO_CUDA_VARIANT = {"caffe.yaml": "conda-forge's Caffe 1.0 is CPU_ONLY; the pip path (environment: venv) compiles "
                                 "Caffe with CUDA where the node has nvcc",
                   **{f"{entry.environment}{suffix}": BETWEEN_ON_CPUS for entry in REGISTRY.values()
                      if entry.release == "between" for suffix in (".requirements.txt", ".yaml")}}
# Run in the environment: what its framework says of its own build (dlbench.backends.describe).
PROBE = ("import json, sys; from dlbench import backends; "
         "print(json.dumps(backends.describe(backends.load(sys.argv[1]))))")


def _nvidia_smi(*arguments: str) -> list[str]:
    """The lines ``nvidia-smi`` prints for ``arguments``; none where it is missing or fails."""
    try:
        listed = subprocess.run(["nvidia-smi", *arguments], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return listed.stdout.splitlines() if listed.returncode == 0 else []


def node_gpus() -> list[str]:
    """The GPUs ``nvidia-smi -L`` lists on this node; none where it is missing or fails."""
    return [line for line in _nvidia_smi("-L") if line.startswith("GPU ")]


def node_compute_capabilities() -> list[int]:
    """Each GPU's compute capability times ten (``nvidia-smi --query-gpu=compute_cap``; sm_60: 60); none where
    nvidia-smi is missing, fails or is too old to say (before driver 510)."""
    try:
        return [round(10 * float(line)) for line in _nvidia_smi("--query-gpu=compute_cap", "--format=csv,noheader")
                if line.strip()]
    except ValueError:
        return []


def node_driver() -> str | None:
    """The NVIDIA driver's version (``nvidia-smi --query-gpu=driver_version``: 580.65.06); None where nvidia-smi
    is missing or fails."""
    found = _nvidia_smi("--query-gpu=driver_version", "--format=csv,noheader")
    return found[0].strip() if found and re.fullmatch(r"\d+(\.\d+)*", found[0].strip()) else None


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


# The first line of every CUDA requirements file says what its build needs and serves (tests/unit/envs/test_envs.py
# holds every file to it): the CUDA it is built for, the oldest driver that runs it (CUDA 13: 580.65.06; 12.x, by
# minor-version compatibility: 525.60.13; 11.x: 450.80.02; 10.0: 410.48), and the GPUs its kernels serve (from its
# main library's fatbinary: docs/environments.md's "CUDA builds"; "and later" where PTX or XLA
# serves newer ones).
BUILD_LINE = re.compile(r"^# dlbench build: CUDA (?P<cuda>\d+(?:\.\d+)*); driver (?P<driver>[\d.]+) or newer; "
                        r"sm_(?P<low>\d+) (?:to sm_(?P<high>\d+)|and later)$")


@dataclass(frozen=True)
class BuildFacts:
    """What a CUDA requirements file's build needs and serves (its first line: :data:`BUILD_LINE`)."""

    file: Path
    cuda: str
    driver: str  # the oldest that runs it
    low: int  # the oldest compute capability (times ten) its kernels serve
    high: int | None  # the newest; None: every later one (PTX, or kernels compiled at run time)

    @classmethod
    def of(cls, file: Path) -> BuildFacts | None:
        """The file's statement; None for a file without one (a CPU build's, a conda environment's)."""
        lines = Path(file).read_text().splitlines()
        found = BUILD_LINE.match(lines[0]) if lines else None
        if not found:
            return None
        return cls(Path(file), found["cuda"], found["driver"], int(found["low"]),
                   int(found["high"]) if found["high"] else None)

    def words(self) -> str:
        return (f"CUDA {self.cuda}, driver {self.driver} or newer, sm_{self.low} "
                + (f"to sm_{self.high}" if self.high else "and later"))

    def misfit(self, capabilities: Sequence[int], driver: str | None) -> str | None:
        """Why it cannot run on a node of ``capabilities`` and ``driver`` (each unknown where empty or None)."""
        if driver is not None and _version(driver) < _version(self.driver):
            return f"the node's driver {driver} is older"
        unserved = sorted({capability for capability in capabilities
                           if capability < self.low or (self.high is not None and capability > self.high)})
        return f"no kernels for sm_{', sm_'.join(map(str, unserved))}" if unserved else None


# Each environment's CUDA builds for the GPUs and drivers its pinned one cannot serve, tried after it in this order:
# for pytorch, torch 2.7.1 (CUDA 12.6, sm_50 to sm_90: the thesis's P100, a V100; a driver older than CUDA 13's).
# Pip's only: a conda environment is made before any job, from envs/<environment>.cuda.yaml.
OLDER_GPU_BUILDS = {"pytorch": ("pytorch.cuda-sm50.requirements.txt",)}


def environment_of(requirements: Path) -> str:
    """The environment a requirements or conda file is of: ``cntk-2.5`` of ``cntk-2.5.cuda.requirements.txt``, of
    ``pytorch.cuda-sm50.requirements.txt`` ``pytorch`` (names may hold dots; the suffixes are known)."""
    return re.sub(r"(\.cuda[^.]*)?\.(requirements\.txt|yaml)$", "", Path(requirements).name)


def cuda_variant(requirements: Path) -> Path:
    """Where an environment's CUDA variant is: ``<env>.cuda.requirements.txt`` beside pip's
    ``<env>.requirements.txt``, ``<env>.cuda.yaml`` beside conda's ``<env>.yaml``."""
    suffix = ".requirements.txt" if requirements.name.endswith(".requirements.txt") else ".yaml"
    return requirements.with_name(f"{requirements.name.removesuffix(suffix)}.cuda{suffix}")


def cuda_builds(requirements: Path) -> list[Path]:
    """An environment's CUDA requirements files, in the order they are tried: its CUDA variant, then its builds for
    older GPUs and drivers (pip's only)."""
    pip = requirements.name.endswith(".requirements.txt")
    older = [requirements.with_name(name) for name in OLDER_GPU_BUILDS.get(environment_of(requirements), ())]
    return [path for path in [cuda_variant(requirements), *(older if pip else [])] if path.exists()]


NO_CUDA_BUILD = "no CUDA build"  # in the choice of a CPU build on a node with GPUs: its GPU runs are unavailable


def choose_requirements(requirements: Path, gpus: list[str], capabilities: Sequence[int] = (),
                        driver: str | None = None) -> tuple[Path, str]:
    """The environment's requirements file for a node with ``gpus`` of ``capabilities`` and ``driver`` (each unknown
    where empty or None): the first of its CUDA builds that serves every GPU and that the driver runs, else
    ``requirements`` (pip requirements or a conda env file: the CPU build), with why no CUDA build serves the node;
    and why, in words."""
    if not gpus:
        return requirements, "CPU build: nvidia-smi lists no GPU on this node"
    builds = cuda_builds(requirements)
    if not builds:
        return requirements, f"CPU build: {NO_CUDA_VARIANT[requirements.name]}"
    node = (f"nvidia-smi lists {len(gpus)} GPU(s)"
            + (f" ({', '.join(f'sm_{c}' for c in capabilities)})" if capabilities else "")
            + (f", driver {driver}" if driver else ""))
    misfits = []
    for path in builds:
        build = BuildFacts.of(path)
        if build is None:  # a conda file: conda's solver matches the build to the driver
            return path, f"CUDA build: {node}"
        misfit = build.misfit(capabilities, driver)
        if misfit is None:
            return path, f"CUDA {build.cuda} build ({build.words()}): {node}"
        misfits.append(f"{path.name} ({build.words()}): {misfit}")
    return requirements, f"CPU build, {NO_CUDA_BUILD} runs here: {node}; " + "; ".join(misfits)


def framework_of(environment: str) -> str:
    """The framework an environment is built for (the first registered: the pytorch environment's is PyTorch)."""
    return next(name for name, entry in REGISTRY.items() if entry.environment == environment)


def ask_framework(status: dict, environment: str, code: str):
    """Runs ``code`` in the environment's interpreter, with this package and the environment's framework's name as
    ``sys.argv[1]``: the JSON of the last line it prints; RuntimeError with the last line of its error."""
    variables = paths.with_package({**os.environ, WORKER_PYTHON_VARIABLE: status.get("worker_python") or ""})
    try:
        found = subprocess.run([status["python"], "-c", code, framework_of(environment)], capture_output=True,
                               text=True, env=variables, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        found = subprocess.CompletedProcess([], 1, "", str(error))
    if found.returncode:
        raise RuntimeError((found.stderr.strip().splitlines() or ["no output"])[-1])
    return json.loads(found.stdout.splitlines()[-1])


def framework_build(status: dict, environment: str) -> dict:
    """Asks the environment's framework what it was built for: ``framework_build`` for the status file,
    or why the framework cannot be imported there."""
    try:
        described = ask_framework(status, environment, PROBE)
    except RuntimeError as error:
        return {"status": "unavailable", "reason": f"{framework_of(environment)} cannot be imported in {environment}: "
                                                   f"{error}"}
    return {"framework_build": described["framework_build"],
            "framework_version": f"{framework_of(environment)} {described['framework_version']}"}


def build_environment(requirements: Path, venv_dir: Path, jobs: int, log, gpus: list[str] | None = None,
                      after_install: Callable[[Path], None] | None = None,
                      capabilities: list[int] | None = None, shared_root: Path | None = None,
                      driver: str | None = None) -> dict:
    """The virtualenv from ``requirements`` (the CUDA build :func:`choose_requirements` picks on a node with ``gpus``
    of ``capabilities`` and ``driver``, by default what nvidia-smi lists), the framework built into it where it has
    no package, and the build it is; ``after_install(venv_dir)`` called between pip's install and anything that
    imports the framework. It is built in ``venv_dir`` (a hardware target's: ``p100@pytorch``), or with a
    ``shared_root`` once for every checkout and target under that root that asks for the same build
    (:func:`shared_build`). On a node with GPUs that no CUDA build serves it is the CPU build, whose
    ``no_gpu_build`` says why (its GPU runs are unavailable, saying so)."""
    environment = environment_of(requirements)
    if gpus is None:
        gpus, capabilities, driver = node_gpus(), node_compute_capabilities(), node_driver()
    requirements, choice = choose_requirements(requirements, gpus, capabilities or (), driver)
    log.write(f"{choice}: {requirements.name}\n")
    if shared_root is None:
        status = _build(environment, requirements, venv_dir, jobs, log, after_install)
    else:
        status = shared_build(environment, requirements, shared_root, jobs, log)
    refused = {"no_gpu_build": choice} if NO_CUDA_BUILD in choice else {}
    return {**status, "requirements": requirements.name, "choice": choice, **refused}


def _build(environment: str, requirements: Path, venv_dir: Path, jobs: int, log,
           after_install: Callable[[Path], None] | None = None) -> dict:
    if environment in WORKER_PYTHONS:
        status = build_worker_venv(environment, requirements, venv_dir, log, after_install)
    else:
        status = build_venv(requirements, venv_dir, log, after_install=after_install)
    source_build = SOURCE_BUILDS.get(environment)
    if status["status"] == "ok" and source_build:
        try:
            status.update(source_build(venv_dir, jobs, log))
        except (OSError, RuntimeError, subprocess.CalledProcessError) as error:
            status.update(status="unavailable", reason=f"{environment} could not be built ({error}); see its log")
    if status["status"] == "ok":
        status.update(framework_build(status, environment))
    if status["status"] == "ok" and (wrong := wrong_build(requirements, status)):
        status.update(status="unavailable", reason=wrong)
    return status


def cannot_run(status: dict, gpus: int) -> str | None:
    """Why a run on ``gpus`` GPUs cannot run in the environment of this ``status``: the environment's own reason,
    or for a GPU run the CPU build's, where no CUDA build serves the node; None where it can."""
    if status["reason"]:
        return status["reason"]
    if gpus and status.get("no_gpu_build"):
        return f"{status['requirements'].split('.')[0]}'s environment is the {status['no_gpu_build']}"
    return None


def wrong_build(requirements: Path, status: dict) -> str | None:
    """Why the framework pip installed is not the build a CUDA requirements file asks for (a CPU build, or another
    CUDA major version: what the machine's pip settings, a local wheel directory, can give), naming both; None where
    it is, and for a CPU file (either build runs its CPU runs)."""
    asked = BuildFacts.of(requirements)
    if asked is None:
        return None
    got = re.match(r"cuda (\d+)", status["framework_build"])
    if got and got[1] == asked.cuda.split(".")[0]:
        return None
    return (f"{requirements.name} asks for a CUDA {asked.cuda} build; pip installed {status['framework_version']}, "
            f"a {status['framework_build']} build (the machine's pip settings, as a local wheel directory, can offer "
            "another build than PyPI's)")

def build_worker_venv(environment: str, requirements: Path, venv_dir: Path, log,
                      after_install: Callable[[Path], None] | None = None) -> dict:
    """A virtualenv on the framework's own old CPython, whose runs start their runner on this one."""
    try:
        base_python = find_worker_python(environment)
    except LookupError as error:
        log.write(f"{error}\n")
        return {"status": "unavailable", "python": None, "reason": str(error)}
    status = build_venv(requirements, venv_dir, log, base_python, after_install)
    if status["status"] != "ok":
        return status
    try:
        if environment in WORKER_SETUP:
            WORKER_SETUP[environment](venv_dir, log)
    except (OSError, RuntimeError) as error:
        return {"status": "unavailable", "python": None, "reason": str(error)}
    return {**status, "python": sys.executable, "worker_python": status["python"]}


# Where environments are shared by every checkout and every test's scratch workflow on the machine (make sets it to
# the user's cache): unset, each workflow builds its own under .venvs/.
SHARED_ROOT_VARIABLE = "DLBENCH_VENV_ROOT"
# What shapes an environment beside its requirements file and interpreter: the code that builds it
BUILD_CODE = ("__init__.py", "caffe_build.py", "cntk_setup.py", "image_reader_libraries.py", "cuda_wheels.py")
SHARED_STATUS = "dlbench-environment.json"  # written last: a shared environment without it is a stopped build


def shared_root() -> Path | None:
    root = os.environ.get(SHARED_ROOT_VARIABLE)
    return Path(root).expanduser() if root else None


def environment_key(environment: str, requirements: Path) -> str:
    """What a shared environment is built from, hashed: its requirements file, the interpreter it is made with
    (the framework's own old CPython for a worker environment) and the code that builds it."""
    if environment in WORKER_PYTHONS:
        base = find_worker_python(environment)
        version = subprocess.run([base, "-c", "import sys; print(sys.version)"], capture_output=True, text=True,
                                 check=True).stdout
    else:
        base, version = sys._base_executable, sys.version
    digest = hashlib.sha256(f"{os.path.realpath(base)}\n{version}\n".encode())
    digest.update(requirements.read_bytes())
    for name in BUILD_CODE:
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:16]


def shared_build(environment: str, requirements: Path, root: Path, jobs: int, log) -> dict:
    """The environment under ``root``, built once for what it is built from (:func:`environment_key`) and then
    reused by every workflow that asks for it: a changed file builds a new one beside it. One build at a time per
    environment (a lock beside it); a build that was stopped is removed and made again."""
    try:
        key = environment_key(environment, requirements)
    except (LookupError, OSError, subprocess.CalledProcessError) as error:
        log.write(f"{error}\n")
        return {"status": "unavailable", "python": None, "reason": str(error)}
    venv_dir = root / f"{environment}-{key}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{venv_dir.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another workflow may be building it: wait for its build
        if (venv_dir / SHARED_STATUS).exists():
            log.write(f"built before from the same files: {venv_dir}\n")
            status = json.loads((venv_dir / SHARED_STATUS).read_text())
        else:
            if venv_dir.exists():
                log.write(f"removing a build that was stopped: {venv_dir}\n")
                shutil.rmtree(venv_dir)
            status = _build(environment, requirements, venv_dir, jobs, log)
            if status["status"] == "ok":
                files.write_json(venv_dir / SHARED_STATUS, status)
    if status.get("worker_python"):  # the runner's interpreter is the workflow's own, whichever built it
        status = {**status, "python": sys.executable}
    return status


def status(path: Path) -> dict:
    """The status file a build wrote; for runs without a built environment, the current Python.
    A ``python`` of None (a worker environment made by conda) also means the current Python."""
    if not path:
        return {"status": "ok", "python": sys.executable, "reason": ""}
    found = json.loads(Path(path).read_text())
    if found["status"] == "ok" and not found["python"]:
        found["python"] = sys.executable
    return found


def current_environment() -> str:
    """The interpreter running the workflow and every distribution installed in it, as one line
    (``environment: current`` runs the frameworks there): a framework upgraded there changes it."""
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions() if d.metadata["Name"])
    return f"{sys.executable} (Python {sys.version.split()[0]}): {', '.join(installed)}"


def resolve(requirements: Path, pip_args: Sequence[str] = ()) -> dict:
    """Whether pip can resolve a requirements file, without installing anything (the registry's metadata, not
    the wheels): ``ok`` with each package it would install and its version, or ``failed`` with pip's error.
    Isolated from this machine's pip settings (a local wheel directory, constraints), so that it sees what a
    fresh node sees; a worker environment's file (CNTK's) is resolved for that interpreter, wheels only."""
    environment = environment_of(requirements)
    with tempfile.TemporaryDirectory() as scratch:
        report = Path(scratch) / "report.json"
        # pip takes another interpreter's version only for a --target install (nothing is installed: a dry run)
        for_interpreter = (["--python-version", WORKER_PYTHONS[environment][0], "--only-binary=:all:",
                            "--target", str(Path(scratch) / "target")] if environment in WORKER_PYTHONS else [])
        command = [sys.executable, "-m", "pip", "--isolated", "install", "--dry-run", "--ignore-installed", "--quiet",
                   "--report", str(report), *for_interpreter, *pip_args, "-r", str(requirements)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 and "DO NOT MATCH THE HASHES" in done.stderr:
            # a download damaged in transit (seen once in CI, gone a minute later): fetched once more, uncached
            done = subprocess.run([*command, "--no-cache-dir"], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            said = [line for line in done.stderr.splitlines()
                    if line.startswith("ERROR") and not line.startswith("ERROR: Ignored")] or done.stderr.splitlines()
            return {"file": str(requirements), "status": "failed", "reason": " ".join(said[-2:]).strip()}
        installs = json.loads(report.read_text())["install"]
    return {"file": str(requirements), "status": "ok",
            "packages": {item["metadata"]["name"]: item["metadata"]["version"] for item in installs}}
