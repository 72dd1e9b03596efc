"""Building Caffe from source: what is checked before anything is compiled or used."""
import sys
import tarfile
from pathlib import Path

import numpy
import pytest
from dlbench import caffe_build


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
