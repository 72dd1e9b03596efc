import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))


@pytest.fixture(scope="session", autouse=True)
def private_slot_locks(tmp_path_factory):
    """Runs under test (the workflow's too, which inherit the variable) lock their devices in a
    directory of the test session's, so that no lock directory outlives the tests."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DLBENCH_SLOTS_DIR", str(tmp_path_factory.mktemp("slots")))
        yield


@pytest.fixture(scope="session")
def record_schema():
    return yaml.safe_load((ROOT / "workflow" / "schemas" / "run_record.schema.yaml").read_text())


@pytest.fixture(scope="session")
def config_schema_path():
    return ROOT / "config" / "schema.yaml"


def _environment(framework: str) -> dict:
    """The framework's venv as the workflow builds it (.venvs/<framework>), built here if missing."""
    from dlbench.envs import build_environment

    venv_dir = ROOT / ".venvs" / framework
    venv_dir.parent.mkdir(exist_ok=True)
    with open(ROOT / ".venvs" / f"{framework}-tests.log", "w") as log:
        status = build_environment(ROOT / "envs" / f"{framework}.requirements.txt", venv_dir, os.cpu_count(), log)
    assert status["status"] == "ok", status["reason"]  # PyPI reaches this machine: fail, never skip
    return status


def _framework_python(framework: str) -> str:
    return _environment(framework)["python"]


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
    return _environment("cntk")["worker_python"]


@pytest.fixture(scope="session")
def jax_python():
    return _framework_python("jax")


def run_in(python: str, script: str, *args) -> dict:
    """Run tests/<script> with a framework's interpreter; its last output line is JSON."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts"), "OMP_NUM_THREADS": "2"}
    completed = subprocess.run([python, str(ROOT / "tests" / script), *map(str, args)],
                               check=False, capture_output=True, text=True, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])
