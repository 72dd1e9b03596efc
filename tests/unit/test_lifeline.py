"""A run's processes end with the monitor that started them, even when it is killed with SIGKILL: a real
holder process, a real watcher group (a process and its child), SIGKILL to the holder."""
import os
import signal
import subprocess
import sys
import time

import psutil
from dlbench import lifeline

from ..conftest import ROOT

HOLDER = """
import sys, time
from pathlib import Path
from dlbench import lifeline
with lifeline.held(Path(sys.argv[1]), sys.stderr) as environment:
    print(environment[lifeline.VARIABLE], flush=True)
    time.sleep(600)
"""
# A runner: watches the lifeline, starts a child (an input worker, say) and waits; it prints both pids.
RUNNER = """
import subprocess, sys, time
from dlbench import lifeline
lifeline.watch()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(child.pid, flush=True)
time.sleep(600)
"""


def _python(code: str, *args, **kwargs) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts"), **kwargs.pop("env", {})}
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, text=True,
                            env=env, **kwargs)


def _gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.05)
    return False


def test_the_runner_and_its_children_end_when_the_monitor_is_killed(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    holder = _python(HOLDER, scratch)
    path = holder.stdout.readline().strip()
    runner = _python(RUNNER, env={lifeline.VARIABLE: path}, start_new_session=True)
    child = int(runner.stdout.readline())
    try:
        assert not _gone(runner.pid, 0.5) and not _gone(child, 0)  # the monitor lives: so does the run
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
        assert runner.wait(timeout=30) == -signal.SIGKILL
        assert _gone(child, 30), "the runner's child outlived the monitor"
        assert not scratch.exists()  # the runner removed what the killed monitor could not
    finally:
        for process in (holder, runner):
            process.kill()
            process.wait()
        if psutil.pid_exists(child):
            os.kill(child, signal.SIGKILL)


def test_a_runner_without_a_lifeline_runs_on(tmp_path):
    runner = _python(RUNNER, start_new_session=True)
    child = int(runner.stdout.readline())
    try:
        assert not _gone(runner.pid, 1) and not _gone(child, 0)
    finally:
        os.killpg(runner.pid, signal.SIGKILL)
        runner.wait()
