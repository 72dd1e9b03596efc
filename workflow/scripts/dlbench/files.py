"""Files written whole or not at all, and read back with the file named when they are not whole.

Standard library only: the runner imports it inside framework environments.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path


def write_json(path: Path, data, indent: int | None = None) -> None:
    """Write ``data`` beside ``path`` and rename it into place: a full disk or a kill mid-write leaves the
    previous file (or none), never half of one. A ``.gz`` path is gzip-compressed."""
    path = Path(path)
    partial = path.with_name(path.name + ".part")
    text = (json.dumps(data, indent=indent) + "\n").encode()
    try:
        with open(partial, "wb") as stream:
            stream.write(gzip.compress(text) if path.suffix == ".gz" else text)
            stream.flush()
            os.fsync(stream.fileno())
        partial.replace(path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


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
