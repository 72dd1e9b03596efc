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
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

VARIABLE = "DLBENCH_LIFELINE"
SCRATCH_PREFIX = ".dlbench-"  # a monitor's scratch directory, beside its run's log


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


# Kills a process group once the lifeline's exclusive lock is gone: a build step's guard (see run_tied)
GUARD = """
import fcntl, os, shutil, signal, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_SH)
try:
    os.killpg(int(sys.argv[2]), signal.SIGKILL)
except ProcessLookupError:
    pass
shutil.rmtree(os.path.dirname(sys.argv[1]), ignore_errors=True)
"""


def run_tied(command, log, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(command, check=True, ...)`` for a long build step (pip, make) that ends with this process
    however this process ends: the command runs in a process group of its own, and a guard process kills that
    group once this process's lifeline lock is gone, a SIGKILL's included (a killed environment job's compilers
    went on for 18 minutes). On an exception here (SIGINT, SIGTERM) the group is killed at once."""
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX + "build-") as scratch, held(Path(scratch), log) as tied:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, **kwargs)
        guard = subprocess.Popen([sys.executable, "-c", GUARD, tied[VARIABLE], str(process.pid)],
                                 start_new_session=True) if tied else None
        try:
            returncode = process.wait()
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        finally:
            if guard:  # before the lock is let go, which would set it off
                guard.kill()
                guard.wait()
    if returncode:
        raise subprocess.CalledProcessError(returncode, command)
    return subprocess.CompletedProcess(command, returncode)


CELL_DEPTH = 6  # runs/<framework>/<dataset>/<network>/<placement>/<variant>/<task>: where a run's log is


def sweep(log_directory: Path, log) -> None:
    """Remove the scratch directories whose monitors are gone: killed together with their runners (SIGKILL to
    both), nobody was left to remove them. Every cell's of the workflow's ``runs/`` where ``log_directory`` is a
    cell's, else its own. A directory counts as dead only where its lifeline file can be locked, which its
    monitor's lock prevents for as long as the monitor lives; one without a lifeline (a monitor between making
    it and locking it) is left alone."""
    log_directory = Path(log_directory)
    runs = log_directory.parents[CELL_DEPTH - 1] if len(log_directory.parents) >= CELL_DEPTH else None
    found = (runs.glob("/".join(["*"] * CELL_DEPTH + [SCRATCH_PREFIX + "*"])) if runs and runs.name == "runs"
             else log_directory.glob(SCRATCH_PREFIX + "*"))
    for scratch in found:
        if scratch.is_symlink() or not scratch.is_dir():
            continue
        try:
            fd = os.open(scratch / "lifeline", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its monitor lives (or the file system has no locks: nothing can be told)
        finally:
            os.close(fd)
        shutil.rmtree(scratch, ignore_errors=True)
        log.write(f"removed {scratch}: the scratch of a run whose monitor was killed\n")
