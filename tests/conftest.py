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
