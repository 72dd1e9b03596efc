"""The shared libraries CNTK 2.7's image reader needs, from Ubuntu 16.04, on which CNTK was built.

CNTK's image deserializer links OpenCV 3.1, whose image codecs need ``libjpeg.so.8``,
``libpng12.so.0``, ``libjasper.so.1`` and ``libtiff.so.5``: Ubuntu 16.04's, which current
distributions (Debian 12) do not ship under those names. :func:`install` fetches their packages
from Ubuntu's archive (xenial-updates, where the fixes ended), checks each against the SHA-256 of
the archive's package index, and unpacks the libraries into the CNTK environment
(``<prefix>/image-reader``); nothing outside it is touched. The CNTK worker :func:`preload`s them
before CNTK loads its reader: a library loaded first satisfies the reader's dependency by its name,
with no ``LD_LIBRARY_PATH`` and no system directory involved.

Standard library only, Python 3.6 code: the CNTK worker's conda environment runs it too.
"""
import ctypes
import hashlib
import io
import os
import posixpath
import tarfile
import urllib.request
from pathlib import Path

ARCHIVE = "http://archive.ubuntu.com/ubuntu/"
ARCHIVE_VARIABLE = "DLBENCH_UBUNTU_ARCHIVE"  # a mirror of it, or a directory holding the pool's files
DIRECTORY = "image-reader"
MISSING = "MISSING"  # in DIRECTORY: why the libraries are not there
# (the package's file in the archive's pool, its SHA-256 from the Packages index, the library), in the
# order they load: each after those it needs (libtiff: libjbig, libjpeg; libjasper: libjpeg).
PACKAGES = (
    ("pool/main/j/jbigkit/libjbig0_2.1-3.1_amd64.deb",
     "70005b26acd942c7eb05903508172a7a531210fce6f35cd36a900b8bebb29413", "libjbig.so.0"),
    ("pool/main/libj/libjpeg-turbo/libjpeg-turbo8_1.4.2-0ubuntu3.4_amd64.deb",
     "07d65b5d5e8d2cd634c831724747f2da8c1ac100d05a8480787254c211e7c5ac", "libjpeg.so.8"),
    ("pool/main/t/tiff/libtiff5_4.0.6-1ubuntu0.8_amd64.deb",
     "5051b90c9cb79c3dc2498110e4dbc2070dda6b975fcdb2f05e720e7bd447cae5", "libtiff.so.5"),
    ("pool/main/libp/libpng/libpng12-0_1.2.54-1ubuntu1.1_amd64.deb",
     "9d938a376dafd1668827ceeb742f18b164c390e53774b06eaaf644713b6ffb25", "libpng12.so.0"),
    ("pool/main/j/jasper/libjasper1_1.900.1-debian1-2.4ubuntu1.3_amd64.deb",
     "ff4c57fdc8641179bf25cfc82c237bd53f5a30ea41ed37a439594d3ea3552d78", "libjasper.so.1"),
)


def ar_members(data):
    """The members of a Unix ``ar`` archive (a .deb is one), by name."""
    if data[:8] != b"!<arch>\n":
        raise ValueError("not an ar archive")
    members, offset = {}, 8
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58].decode())
        members[name] = data[offset + 60:offset + 60 + size]
        offset += 60 + size + size % 2  # members start on even offsets
    return members


def library_from_deb(deb, soname):
    """The bytes of ``soname`` in a .deb's data archive, following its symbolic link to the file."""
    data = next(content for name, content in ar_members(deb).items() if name.startswith("data.tar"))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        by_name = {posixpath.normpath(member.name): member for member in tar.getmembers()}
        member = next((m for name, m in by_name.items() if posixpath.basename(name) == soname), None)
        if member is None:
            raise ValueError(f"{soname} is not in the package")
        for _ in range(8):  # a link to a link (libpng12: /usr/lib -> /lib -> the file)
            if not member.issym():
                return tar.extractfile(member).read()
            target = posixpath.join(posixpath.dirname(posixpath.normpath(member.name)), member.linkname)
            member = by_name[posixpath.normpath(target).lstrip("/")]
        raise ValueError(f"{soname}: too many symbolic links")


def _fetch(pool_path):
    archive = os.environ.get(ARCHIVE_VARIABLE, ARCHIVE)
    if "://" not in archive:
        return Path(archive, pool_path).read_bytes()
    with urllib.request.urlopen(archive.rstrip("/") + "/" + pool_path, timeout=60) as response:
        return response.read()


def install(prefix, log):
    """Fetch, check and unpack the libraries into ``<prefix>/image-reader``. On failure, the reason is
    written beside them (MISSING) and raised."""
    directory = Path(prefix, DIRECTORY)
    directory.mkdir(parents=True, exist_ok=True)
    try:
        for pool_path, sha256, soname in PACKAGES:
            deb = _fetch(pool_path)
            actual = hashlib.sha256(deb).hexdigest()
            if actual != sha256:
                raise ValueError(f"{pool_path}: SHA-256 {actual}, the archive's index says {sha256}")
            (directory / soname).write_bytes(library_from_deb(deb, soname))
            log.write(f"{directory / soname}: {soname} from {posixpath.basename(pool_path)}\n")
    except (OSError, ValueError) as error:
        archive = os.environ.get(ARCHIVE_VARIABLE, ARCHIVE)
        reason = f"Ubuntu 16.04's {soname} could not be installed from {archive}: {error}"
        (directory / MISSING).write_text(reason + "\n")
        raise RuntimeError(reason) from error
    if (directory / MISSING).exists():
        (directory / MISSING).unlink()


def preload(prefix):
    """Load the libraries in ``<prefix>/image-reader`` for CNTK's reader; why not, where they are not there."""
    directory = Path(prefix, DIRECTORY)
    if (directory / MISSING).exists():
        return (directory / MISSING).read_text().strip()
    if not all((directory / soname).exists() for _, _, soname in PACKAGES):
        return f"Ubuntu 16.04's libraries for it are not installed in {directory}"
    for _, _, soname in PACKAGES:
        ctypes.CDLL(str(directory / soname), mode=ctypes.RTLD_GLOBAL)
    return None
