"""Which GPUs and cores of the node a run holds, so that concurrent jobs never share them.

Snakemake counts a ``gpu`` resource but does not say which GPU a job gets (snakemake issue #281):
two jobs asking for one GPU each could both use GPU 0 and corrupt each other's speed, memory and
power. Here every device (a GPU, a core) is a lock file in a node-wide directory, and a run holds
an exclusive ``flock`` on the files of its devices for its whole life. The kernel drops a flock
when the holder's file is closed, on any exit, SIGKILL included: a slot is never given twice and
never leaks. The holder's PID is written into the file, for the message of a job that waits.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path

LOCK_DIR = Path("/tmp/dlbench-slots")  # node-wide: every job on the node must see the same files
POLL_S = 0.2


class SlotsBusy(TimeoutError):
    """The devices a run needs stayed held by other runs for the whole timeout."""


def _lock_path(lock_dir: Path, kind: str, ident: str) -> Path:
    return lock_dir / f"{kind}-{ident.replace('/', '_')}.lock"


def _try_lock(path: Path) -> int | None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd


@contextlib.contextmanager
def hold(kind: str, inventory: list[str], count: int, lock_dir: Path = LOCK_DIR, timeout_s: float = 3600,
         log=print):
    """Hold ``count`` of the ``inventory``'s devices (identifiers: GPU UUIDs, core numbers) exclusively
    for the block; yield their identifiers. Waits while they are held by other runs; a partial set is
    let go before waiting, so two runs that each need two GPUs cannot deadlock holding one each."""
    if count > len(inventory):
        raise ValueError(f"{count} {kind}(s) requested; this node has {len(inventory)}: {', '.join(inventory)}")
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline, reported = time.monotonic() + timeout_s, False
    held: dict[str, int] = {}
    try:
        while True:
            busy = {}  # device: the PID written by its holder
            for ident in inventory:
                if len(held) == count:
                    break
                path = _lock_path(lock_dir, kind, ident)
                fd = _try_lock(path)
                if fd is None:
                    busy[ident] = path.read_text().strip() or "?"
                else:
                    held[ident] = fd
            if len(held) == count:
                break
            for fd in held.values():
                os.close(fd)
            held.clear()
            if time.monotonic() > deadline:
                raise SlotsBusy(f"{count} {kind}(s) not free within {timeout_s:.0f} s; held: {busy}")
            if not reported:
                log(f"waiting for {count} free {kind}(s); held now (device: pid): {busy}")
                reported = True
            time.sleep(POLL_S)
        yield list(held)
    finally:
        for fd in held.values():
            os.close(fd)


def cores() -> list[str]:
    """The cores this process may run on (a Slurm job's own, where Slurm binds them)."""
    return [str(core) for core in sorted(os.sched_getaffinity(0))]
