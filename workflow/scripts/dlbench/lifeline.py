"""A run's processes end when its monitor ends, however the monitor ends.

The monitor stops the runner itself on a timeout, an exception, SIGINT or SIGTERM. Killed with
SIGKILL (the OOM killer, a scheduler), it can do nothing: so it holds an exclusive ``flock`` on a
lifeline file in its scratch directory for as long as it lives, and every runner process (each
rank of a data-parallel group too, whose launcher starts them in sessions of their own) waits in
a thread for a shared lock on that file. The kernel drops the monitor's lock when it dies, the
waiter gets its lock, removes the scratch directory the monitor could not remove, and kills its
process group: the runner and what it started (input-pipeline workers, the CNTK worker). CNTK's
MPI ranks, which mpiexec starts in groups of their own, watch it too.

Standard library only, and Python 3.6 code: runners import it inside framework environments, and
the CNTK worker under CNTK's Python 3.6.
"""
import contextlib
import fcntl
import os
import shutil
import signal
import sys
import threading
from pathlib import Path

VARIABLE = "DLBENCH_LIFELINE"


@contextlib.contextmanager
def held(scratch: Path, log):
    """Hold the lifeline in ``scratch`` for the block; yield the environment that tells a runner of it."""
    path = Path(scratch, "lifeline")
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as error:  # a file system without locks: the runner cannot watch, and is told nothing
        os.close(fd)
        log.write(f"no lifeline ({path}: {error}): if this monitor is killed, its runner runs on\n")
        yield {}
        return
    try:
        yield {VARIABLE: str(path.absolute())}
    finally:
        os.close(fd)


def watch() -> None:
    """In a runner process: end this process's group once the monitor that started it has ended."""
    path = os.environ.get(VARIABLE)
    if path:
        threading.Thread(target=_end_with_monitor, args=(Path(path),), name="lifeline", daemon=True).start()


def _end_with_monitor(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        fcntl.flock(fd, fcntl.LOCK_SH)  # granted once the monitor's exclusive lock is gone
    except FileNotFoundError:
        pass  # the monitor has already removed its scratch directory: it has ended
    except OSError as error:
        print(f"dlbench: cannot watch the monitor ({path}: {error})", file=sys.stderr, flush=True)
        return
    with contextlib.suppress(OSError):  # stderr may be a pipe whose reader is gone (mpiexec's, for a rank)
        print("dlbench: the monitor of this run has ended; stopping the run", file=sys.stderr, flush=True)
    shutil.rmtree(path.parent, ignore_errors=True)
    if os.getpgrp() == os.getpid():  # the leader of the group it was started in: it and its children
        os.killpg(0, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)
