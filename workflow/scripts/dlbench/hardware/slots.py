"""Which GPUs and cores of the node a run holds, so that concurrent jobs never share them.

Snakemake counts a ``gpu`` resource but does not say which GPU a job gets (snakemake issue #281):
two jobs asking for one GPU each could both use GPU 0 and corrupt each other's speed, memory and
power. Here every device (a GPU, a core) is a lock file in a lock directory, and a run holds an
exclusive ``flock`` on the files of its devices for its whole life. The kernel drops a flock when
the last descriptor of it is closed, on any exit, SIGKILL included: a slot is never given twice and
never leaks. The monitor passes its descriptors on to the runner, so the devices stay held for as
long as either process lives.

The lock directory is the user's own (``/tmp/dlbench-slots-<uid>``, mode 0700) unless the config
(``slots.directory``) or ``$DLBENCH_SLOTS_DIR`` names a shared one, e.g. a group directory that
every user of a node locks in. It must be owned by this user or root and not writable by every
user: anyone who can write there could hold every lock forever or plant links. Its own entry is
checked before anything follows it: a symbolic link there is followed only if this user or root
made it (another user could plant one at the default path, in the shared temporary directory).
Anyone who can open a lock file can hold it, and opening needs only read permission: lock files
are 0600, or in a group-writable (shared) directory 0660 and of the directory's group, so that
only the owner and that group can take them. Lock files are opened read-only, never through a
symbolic link, and never written: who holds one is read from the kernel (``/proc/locks``).
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path

DIRECTORY_VARIABLE = "DLBENCH_SLOTS_DIR"
POLL_S = 0.2


class SlotError(RuntimeError):
    """The run cannot hold its devices: the lock directory is unusable, or they stayed busy."""


class SlotsBusy(SlotError):
    """The devices a run needs stayed held by other runs for the whole wait."""


def lock_dir(configured: str | None = None) -> Path:
    """The config's ``slots.directory``, else ``$DLBENCH_SLOTS_DIR``, else this user's own directory."""
    return Path(configured or os.environ.get(DIRECTORY_VARIABLE) or f"/tmp/dlbench-slots-{os.geteuid()}")


def prepare(directory: Path) -> Path:
    """Create the lock directory (mode 0700) or check that another user cannot tamper with it: its own
    entry first (a link is followed only if this user or root made it), then the directory it is."""
    advice = f"remove it, or set slots.directory (or ${DIRECTORY_VARIABLE}) to a directory of yours"
    directory = Path(directory)
    try:
        directory.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as error:
        raise SlotError(f"cannot create the slot lock directory {directory}: {error}") from error
    entry = directory.lstat()
    if stat.S_ISLNK(entry.st_mode) and entry.st_uid not in (os.geteuid(), 0):
        raise SlotError(f"slot lock directory {directory} is a symbolic link made by uid {entry.st_uid}, not by you "
                        f"(uid {os.geteuid()}) nor root: planted to take your locks elsewhere? (refused); {advice}")
    path = Path(os.path.realpath(directory))
    info = path.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise SlotError(f"slot lock directory {path} is not a directory; {advice}")
    if info.st_uid not in (os.geteuid(), 0):
        raise SlotError(f"slot lock directory {path} belongs to uid {info.st_uid}, not to you (uid {os.geteuid()}) "
                        f"nor root: another user could hold its locks or plant links there; {advice}")
    if info.st_mode & stat.S_IWOTH:
        raise SlotError(f"slot lock directory {path} is writable by every user (mode {stat.filemode(info.st_mode)}):"
                        f" anyone could hold its locks forever or plant links there; chmod o-w it, or {advice}")
    return path


@dataclass(frozen=True)
class Held:
    devices: list[str]  # identifiers, in inventory order
    descriptors: list[int]  # the locks' file descriptors, for a child process that must keep them held


def _lock_path(directory: Path, kind: str, ident: str) -> Path:
    return directory / f"{kind}-{ident.replace('/', '_')}.lock"


def _open(path: Path) -> int:
    """A descriptor of the lock file, created if missing; never through a link, never a FIFO or device.
    Only its owner and, in a shared directory, the directory's group may open it (see the module's text)."""
    try:
        # O_NONBLOCK: a FIFO planted under the name would block a read-only open; it is refused below.
        fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600)
    except OSError as error:
        why = "it is a symbolic link (refused)" if os.path.islink(path) else error.strerror
        raise SlotError(f"cannot open the slot lock file {path}: {why}") from error
    try:
        _restrict(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _restrict(fd: int, path: Path) -> None:
    """Give a lock file of this user's its mode and group (fixing one an older version made 0644); refuse
    one of another user's that everyone may open, or anything but a regular file."""
    info, directory = os.fstat(fd), path.parent.stat()
    if not stat.S_ISREG(info.st_mode):
        raise SlotError(f"slot lock file {path} is not a regular file (refused)")
    if info.st_nlink != 1:  # a hard link planted under the name: its mode and group are another file's
        raise SlotError(f"slot lock file {path} has {info.st_nlink} links: another name shares it (a hard link "
                        "planted there?); refused, and left as it is: remove it if it is not a file of yours")
    shared = bool(directory.st_mode & stat.S_IWGRP)
    mode, group = (0o660, directory.st_gid) if shared else (0o600, info.st_gid)
    if info.st_uid == os.geteuid():
        try:
            if info.st_gid != group:
                os.fchown(fd, -1, group)
            if stat.S_IMODE(info.st_mode) != mode:
                os.fchmod(fd, mode)
        except OSError as error:
            raise SlotError(f"cannot give the slot lock file {path} mode {mode:o} and the directory's group "
                            f"(gid {group}), so that only its users can hold it: {error.strerror}") from error
    elif info.st_mode & (stat.S_IROTH | stat.S_IWOTH):
        raise SlotError(f"slot lock file {path} (uid {info.st_uid}, mode {stat.filemode(info.st_mode)}) can be opened, "
                        f"and so held for ever, by every user: its owner or root must chmod o-rw it (refused)")


def _try_lock(path: Path) -> int | None:
    fd = _open(path)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def holders(paths: list[Path]) -> dict[Path, str]:
    """The PID holding each lock file, as the kernel lists it (``?`` where it cannot be told)."""
    pids = {}
    try:
        for line in Path("/proc/locks").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 6 and fields[1] == "FLOCK":  # blocked waiters' lines read "N: -> FLOCK ..."
                pids[fields[5]] = fields[4]
    except OSError:
        pass
    found = {}
    for path in paths:
        try:
            info = path.stat()
            key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        except OSError:
            key = None
        found[path] = pids.get(key, "?")
    return found


@contextlib.contextmanager
def hold(kind: str, inventory: list[str], count: int, directory: Path, wait_s: float | None = None, log=print):
    """Hold ``count`` of the ``inventory``'s devices (identifiers: GPU UUIDs, core numbers) exclusively
    for the block. Waits while they are held by other runs, at most ``wait_s`` seconds (None: as
    long as it takes); a partial set is let go before waiting, so two runs that each need two GPUs
    cannot deadlock holding one each."""
    if count > len(inventory):
        raise ValueError(f"{count} {kind}(s) requested; this node has {len(inventory)}: {', '.join(inventory)}")
    directory = prepare(directory)
    deadline = None if wait_s is None else time.monotonic() + wait_s
    reported = False
    held: dict[str, int] = {}
    try:
        while True:
            busy = []
            for ident in inventory:
                if len(held) == count:
                    break
                path = _lock_path(directory, kind, ident)
                fd = _try_lock(path)
                if fd is None:
                    busy.append(ident)
                else:
                    held[ident] = fd
            if len(held) == count:
                break
            for fd in held.values():
                os.close(fd)
            held.clear()
            timed_out = deadline is not None and time.monotonic() > deadline
            if timed_out or not reported:
                by_device = dict(zip(busy, holders([_lock_path(directory, kind, i) for i in busy]).values()))
                if timed_out:
                    raise SlotsBusy(f"{count} {kind}(s) not free within {wait_s:.0f} s; held: {by_device}")
                log(f"waiting for {count} free {kind}(s); held now (device: pid): {by_device}")
                reported = True
            time.sleep(POLL_S)
        yield Held(list(held), list(held.values()))
    finally:
        for fd in held.values():
            os.close(fd)


def cores() -> list[str]:
    """The cores this process may run on (a Slurm job's own, where Slurm binds them)."""
    return [str(core) for core in sorted(os.sched_getaffinity(0))]
