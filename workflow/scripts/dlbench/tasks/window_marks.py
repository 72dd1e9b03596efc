"""The runner tells its monitor when the timed window opens and closes, so that the monitor samples the host at the
window's bounds rather than only on its clock: the window's cumulative counters (the held cores' busy time, the
run's CPU time, RAPL's energy) span the window itself, however short, and inside it a CPU run's monitor can wake
seldom (each wake-up takes a core from a run that trains on every core: :class:`dlbench.hardware.sampler.Sampler`).

The channel is a FIFO in the monitor's scratch directory, named in the runner's environment; the monitor holds it
open for reading and writing, so that a runner's non-blocking write never waits and never fails for want of a
reader, and a closed writer never makes it readable. Every process of a run may mark; where no monitor listens
(a run started by hand, ranks on other nodes), marking does nothing.

Standard library only: the runner imports it inside framework environments.
"""
import os
import stat
from pathlib import Path

VARIABLE = "DLBENCH_WINDOW_MARKS"
OPEN, CLOSE, WAKE = b"o", b"c", b"w"  # WAKE: the monitor's own, to end a sampler's wait


def mark(what: bytes) -> None:
    """Tell the monitor that the window opens (``OPEN``) or has closed (``CLOSE``); nothing without one."""
    path = os.environ.get(VARIABLE)
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:  # gone: the monitor samples on its clock alone
        return
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):  # a variable that names another file: never written to
            os.write(fd, what)
    except OSError:
        pass
    finally:
        os.close(fd)


class Listener:
    """The monitor's end: a FIFO at ``path``, and the environment that names it to the runner."""

    def __init__(self, path: Path):
        os.mkfifo(path, 0o600)
        self.path, self.fd = path, os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
        self.environment = {VARIABLE: str(path)}

    def read(self) -> bytes:
        """The marks written since the last read (none: b"")."""
        try:
            return os.read(self.fd, 4096)
        except BlockingIOError:
            return b""

    def wake(self) -> None:
        os.write(self.fd, WAKE)

    def close(self) -> None:
        os.close(self.fd)
