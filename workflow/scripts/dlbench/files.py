"""Files written whole or not at all, and read back with the file named when they are not whole.

Standard library only: the runner imports it inside framework environments.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def replaced(path: Path) -> Iterator[BinaryIO]:
    """A new file beside ``path``, open for writing, renamed onto ``path`` when the block ends, removed where it
    raises: a full disk, a kill or a dropped connection mid-write leaves the previous file (or none), never half of
    one; and no link is followed. The new file is made with ``O_CREAT | O_EXCL`` under a name of its own
    (:func:`tempfile.mkstemp`), so that a link planted where a fixed name such as ``<path>.part`` would be writes
    nothing through it, and the rename replaces a link at ``path`` itself, never its target: on a results directory
    others can write to, a planted link overwrites no file of theirs."""
    path = Path(path)
    descriptor, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(partial, 0o666 & ~_umask())  # mkstemp's 0600 made as an open() would make it
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def staged_directory(output: Path) -> Iterator[Path]:
    """A new directory beside ``output`` that becomes ``output`` only if the block completes (a previous ``output``
    removed then, a link there replaced, its target untouched), removed where it raises. It is made by
    :func:`tempfile.mkdtemp` under a name of its own, readable by this user only while it is written, so that what
    a framework's own writer writes into it (LMDB, RecordIO, TFRecord) lands in a directory no one else could plant
    a link in. The directories above ``output`` are made where missing."""
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=output.parent, prefix=f".{output.name}.", suffix=".partial"))
    try:
        yield scratch
        os.chmod(scratch, 0o777 & ~_umask())
        if output.is_symlink():
            output.unlink()
        elif output.exists():
            shutil.rmtree(output)
        os.replace(scratch, output)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


class PlantedLink(OSError):
    """A link where dlbench makes a directory of its own; the message names it and where it points."""


def directory(path: Path, within: Path) -> Path:
    """``path`` made where missing, ``within`` (a directory dlbench makes, such as ``results/.current``) and each
    directory below it down to ``path`` checked to be no link: a file written there goes where dlbench means it
    to, not through a link into another user's directory. What lies above ``within`` (``results/`` itself, which
    a user may link to a larger disk) is the user's to choose."""
    path, within = Path(path), Path(within)
    within.parent.mkdir(parents=True, exist_ok=True)
    place = within
    for part in ("", *path.relative_to(within).parts):
        place = place / part
        if place.is_symlink():
            raise PlantedLink(f"{place} is a link (to {os.readlink(place)}) where dlbench makes a directory of its "
                              f"own, and it writes nothing through a link: remove the link")
        place.mkdir(exist_ok=True)
    return path


def write_bytes(path: Path, data: bytes) -> None:
    """``data`` written to ``path`` whole or not at all, through no link (:func:`replaced`)."""
    with replaced(path) as stream:
        stream.write(data)


def _umask() -> int:
    """The process's umask, read without setting it (os.umask sets it, for every thread at once)."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1], 8) for line in status if line.startswith("Umask:"))
    except (OSError, StopIteration):  # not Linux, or before Linux 4.7
        return 0o022


def write_text(path: Path, text: str) -> None:
    """:func:`write_bytes` of ``text`` in UTF-8."""
    write_bytes(path, text.encode())


def write_json(path: Path, data, indent: int | None = None) -> None:
    """:func:`write_bytes` of ``data`` as JSON; a ``.gz`` path gzip-compressed."""
    text = (json.dumps(data, indent=indent) + "\n").encode()
    write_bytes(path, gzip.compress(text) if Path(path).suffix == ".gz" else text)


class Unreadable(ValueError):
    """A file that is not the JSON object it should be; the message names the file."""


def read_json(path: Path) -> dict:
    """The JSON object in ``path``; :class:`Unreadable` naming the file and what is wrong with it."""
    try:
        raw = Path(path).read_bytes()
        found = json.loads(gzip.decompress(raw) if Path(path).suffix == ".gz" else raw)
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise Unreadable(f"{path}: {type(error).__name__}: {error}") from None
    if not isinstance(found, dict):
        raise Unreadable(f"{path}: a JSON {type(found).__name__}, not an object")
    return found


def free_bytes(path: Path) -> int | None:
    try:
        found = os.statvfs(path)
    except OSError:
        return None
    return found.f_bavail * found.f_frsize
