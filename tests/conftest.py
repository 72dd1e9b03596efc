import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))


@pytest.fixture(scope="session")
def record_schema():
    return yaml.safe_load((ROOT / "workflow" / "schemas" / "run_record.schema.yaml").read_text())


@pytest.fixture(scope="session")
def config_schema_path():
    return ROOT / "config" / "schema.yaml"


@pytest.fixture(scope="session")
def mxnet_python():
    """The MXNet venv the workflow builds (.venvs/mxnet), built here if missing: RecordIO needs it."""
    from dlbench.envs import build_venv

    venv_dir = ROOT / ".venvs" / "mxnet"
    venv_dir.parent.mkdir(exist_ok=True)
    with open(ROOT / ".venvs" / "mxnet-tests.log", "w") as log:
        status = build_venv(ROOT / "envs" / "mxnet.requirements.txt", venv_dir, log)
    assert status["status"] == "ok", status["reason"]  # PyPI reaches this machine: fail, never skip
    return status["python"]
