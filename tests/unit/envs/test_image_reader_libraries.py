"""CNTK's image-reader libraries from Ubuntu 16.04: packages checked and unpacked, or why not."""
import hashlib
import io
import tarfile

import pytest
from dlbench.envs import image_reader_libraries as libraries


def deb(files: dict, links: dict) -> bytes:
    """A .deb as dpkg builds one: an ar archive whose data.tar.xz holds ``files`` and symbolic ``links``."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w:xz") as tar:
        for name, content in files.items():
            info = tarfile.TarInfo(f"./usr/lib/x86_64-linux-gnu/{name}")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for name, target in links.items():
            info = tarfile.TarInfo(f"./usr/lib/x86_64-linux-gnu/{name}")
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    archive = b"!<arch>\n"
    for name, content in (("debian-binary", b"2.0\n"), ("control.tar.gz", b"x"), ("data.tar.xz", data.getvalue())):
        archive += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(content):<10}`\n".encode() + content
        archive += b"\n" * (len(content) % 2)
    return archive


def test_the_library_is_read_through_its_link():
    package = deb({"libjpeg.so.8.0.2": b"\x7fELF jpeg"}, {"libjpeg.so.8": "libjpeg.so.8.0.2"})
    assert libraries.library_from_deb(package, "libjpeg.so.8") == b"\x7fELF jpeg"
    with pytest.raises(ValueError, match="libpng12.so.0 is not in the package"):
        libraries.library_from_deb(package, "libpng12.so.0")


def test_a_package_whose_checksum_differs_is_refused_and_the_reason_kept(tmp_path, monkeypatch):
    pool = tmp_path / "archive"
    for pool_path, _, soname in libraries.PACKAGES:
        (pool / pool_path).parent.mkdir(parents=True, exist_ok=True)
        (pool / pool_path).write_bytes(deb({soname: b"not the archive's"}, {}))
    monkeypatch.setenv(libraries.ARCHIVE_VARIABLE, str(pool))
    with open(tmp_path / "log", "w") as log, pytest.raises(RuntimeError) as refused:
        libraries.install(tmp_path / "env", log)
    assert str(refused.value).startswith(f"Ubuntu 16.04's libjbig.so.0 could not be installed from {pool}: "
                                         "pool/main/j/jbigkit/libjbig0_2.1-3.1_amd64.deb: SHA-256 ")
    assert not list((tmp_path / "env" / libraries.DIRECTORY).glob("*.so*"))
    assert libraries.preload(tmp_path / "env") == str(refused.value)


def test_checked_packages_are_unpacked_into_the_environment(tmp_path, monkeypatch):
    pool = tmp_path / "archive"
    packages = []
    for pool_path, _, soname in libraries.PACKAGES:
        content = deb({soname + ".1": f"library {soname}".encode()}, {soname: soname + ".1"})
        (pool / pool_path).parent.mkdir(parents=True, exist_ok=True)
        (pool / pool_path).write_bytes(content)
        packages.append((pool_path, hashlib.sha256(content).hexdigest(), soname))
    monkeypatch.setattr(libraries, "PACKAGES", tuple(packages))
    monkeypatch.setenv(libraries.ARCHIVE_VARIABLE, str(pool))
    (tmp_path / "env" / libraries.DIRECTORY).mkdir(parents=True)
    (tmp_path / "env" / libraries.DIRECTORY / libraries.MISSING).write_text("an earlier failure")
    with open(tmp_path / "log", "w") as log:
        libraries.install(tmp_path / "env", log)
    installed = tmp_path / "env" / libraries.DIRECTORY
    assert (installed / "libtiff.so.5").read_bytes() == b"library libtiff.so.5"
    assert not (installed / libraries.MISSING).exists()
