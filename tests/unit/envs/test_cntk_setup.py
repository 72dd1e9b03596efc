"""CNTK 2.7's wheel made importable in its virtualenv: OpenMPI 4's libraries linked under the 1.10 names it needs."""
import io
import shutil
import subprocess
import sys

import pytest
from dlbench.envs import cntk_setup


@pytest.fixture
def venv(tmp_path):
    """A real virtualenv (this Python's) holding a stand-in ``cntk`` package with the wheel's ``cntk/libs``."""
    directory = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    package = next(directory.glob("lib/python3*/site-packages")) / "cntk"
    (package / "libs").mkdir(parents=True)
    (package / "__init__.py").write_text("__version__ = '2.7'\n")
    return directory


@pytest.fixture
def openmpi4(tmp_path, monkeypatch):
    """A library directory with OpenMPI 4's two libraries, the only one searched."""
    directory = tmp_path / "lib"
    directory.mkdir()
    for name in cntk_setup.SONAMES.values():
        (directory / name).write_bytes(b"\x7fELF")
    monkeypatch.setattr(cntk_setup, "LIBRARY_DIRS", (str(directory),))
    return directory


def test_the_old_sonames_point_at_openmpi_4_and_cntk_imports(venv, openmpi4):
    log = io.StringIO()
    cntk_setup.link_openmpi(venv, log)
    libs = next(venv.glob("lib/python3*/site-packages/cntk/libs"))
    for old, new in cntk_setup.SONAMES.items():
        assert (libs / old).resolve() == openmpi4 / new
    assert log.getvalue().endswith("cntk 2.7 imports\n")
    cntk_setup.link_openmpi(venv, io.StringIO())  # again, over its own links (a rebuilt environment)
    assert (libs / "libmpi.so.12").resolve() == openmpi4 / "libmpi.so.40"


def test_without_openmpi_the_error_names_the_package(venv, tmp_path, monkeypatch):
    monkeypatch.setattr(cntk_setup, "LIBRARY_DIRS", (str(tmp_path / "nothing"),))
    with pytest.raises(RuntimeError, match=r"CNTK 2.7 needs OpenMPI's libmpi.so.40 \(Debian: libopenmpi3"):
        cntk_setup.link_openmpi(venv, io.StringIO())


def test_a_cntk_that_does_not_import_or_is_missing_says_so(venv, openmpi4):
    package = next(venv.glob("lib/python3*/site-packages/cntk"))
    (package / "__init__.py").write_text("raise ImportError('libmpi.so.12: cannot open shared object file')\n")
    with pytest.raises(RuntimeError, match="cntk does not import: ImportError: libmpi.so.12: cannot open"):
        cntk_setup.link_openmpi(venv, io.StringIO())
    shutil.rmtree(package)
    with pytest.raises(RuntimeError, match="no cntk/libs in .*: was the cntk wheel installed"):
        cntk_setup.link_openmpi(venv, io.StringIO())
