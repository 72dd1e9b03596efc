import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
# Scripts a test runs with a framework's interpreter (and CNTK's stand-in package)
IN_FRAMEWORK = ROOT / "tests" / "in_framework"
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))


@pytest.fixture(scope="session", autouse=True)
def own_temporary_directory():
    """This session's temporary files (its runs' scratch directories too: TMPDIR reaches them) in a directory of
    its own, so that two test sessions on one machine (a user's beside CI's) never take each other's
    directories for leftovers (:func:`nothing_of_the_run_outlives_the_test` removes those). Not named
    ``dlbench-*``: an older session's check would take it for one of its runs'. Mode 0755: the slots tests'
    other user enters a shared directory inside it."""
    directory = Path(tempfile.mkdtemp(prefix="pytest-dlbench-"))
    directory.chmod(0o755)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TMPDIR", str(directory))
        patch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
        yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture(scope="session", autouse=True)
def private_slot_locks(own_temporary_directory, tmp_path_factory):
    """Runs under test (the workflow's too, which inherit the variable) lock their devices in a
    directory of the test session's, so that no lock directory outlives the tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLBENCH_SLOTS_DIR", str(tmp_path_factory.mktemp("slots")))
        yield


# What a run starts: the monitor and runner (dlbench), CNTK's worker and its MPI, torchrun, Snakemake
RUN_PROCESS_WORDS = ("dlbench", "cntk_worker", "mpiexec", "orted", "torch.distributed.run", "snakemake")


def _run_processes_started_since(epoch: float, known: set[int]) -> list[psutil.Process]:
    """Processes of a run begun since ``epoch``: this session's descendants, or orphans (a parent gone)."""
    own = {child.pid for child in psutil.Process().children(recursive=True)}
    found = []
    for process in psutil.process_iter(["pid", "ppid", "create_time", "cmdline"]):
        info = process.info
        if info["pid"] in known or (info["create_time"] or 0) < epoch or not info["cmdline"]:
            continue
        if (info["pid"] in own or info["ppid"] == 1) and any(word in " ".join(info["cmdline"])
                                                             for word in RUN_PROCESS_WORDS):
            found.append(process)
    return found


@pytest.fixture(autouse=True)
def nothing_of_the_run_outlives_the_test():
    """After each test, no process it started for a run is alive and no dlbench-* temporary directory it
    made is left (issue 30: CNTK's workers and scratch directories outlived their tests). Leftovers fail the
    test and are then removed."""
    epoch, known = time.time() - 1, set(psutil.pids())
    temporary = Path(tempfile.gettempdir())
    directories = set(temporary.glob("dlbench-*"))
    yield
    alive = _run_processes_started_since(epoch, known)
    _, alive = psutil.wait_procs(alive, timeout=10)  # a process being reaped as the test ends
    left = sorted(set(temporary.glob("dlbench-*")) - directories)
    commands = [" ".join(process.info["cmdline"]) for process in alive]
    for process in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    for path in left:
        shutil.rmtree(path, ignore_errors=True)
    assert not commands and not left, f"left by the test: processes {commands}, directories {left}"


@pytest.fixture(scope="session")
def record_schema():
    return yaml.safe_load((ROOT / "workflow" / "schemas" / "run_record.schema.yaml").read_text())


@pytest.fixture(scope="session")
def config_schema_path():
    return ROOT / "config" / "schema.yaml"


@functools.cache
def framework_environment(framework: str) -> dict:
    """The framework's venv as the workflow builds it (.venvs/<framework>), built here if missing; once a
    session."""
    from dlbench.envs import build_environment

    venv_dir = ROOT / ".venvs" / framework
    venv_dir.parent.mkdir(exist_ok=True)
    with open(ROOT / ".venvs" / f"{framework}-tests.log", "w") as log:
        status = build_environment(ROOT / "envs" / f"{framework}.requirements.txt", venv_dir, os.cpu_count(),
                                   log)
    assert status["status"] == "ok", status["reason"]  # PyPI reaches this machine: fail, never skip
    return status


def _framework_python(framework: str) -> str:
    return framework_environment(framework)["python"]


@pytest.fixture(scope="session")
def mxnet_python():
    return _framework_python("mxnet")


@pytest.fixture(scope="session")
def tensorflow_python():
    return _framework_python("tensorflow")


@pytest.fixture(scope="session")
def caffe_python():
    return _framework_python("caffe")  # the first time, Caffe is compiled from source (about 4 minutes)


@pytest.fixture(scope="session")
def cntk_worker_python():
    """CNTK's own CPython 3.6 (pyenv's on this project's machines), with CNTK 2.7 in its venv."""
    return framework_environment("cntk")["worker_python"]


@pytest.fixture(scope="session")
def jax_python():
    return _framework_python("jax")


def run_in(python: str, script: str, *args) -> dict:
    """Run tests/in_framework/<script> with a framework's interpreter; its last output line is JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts"), "OMP_NUM_THREADS": "2"}
    completed = subprocess.run([python, str(IN_FRAMEWORK / script), *map(str, args)],
                               check=False, capture_output=True, text=True, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])
