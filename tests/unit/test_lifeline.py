"""A run's processes end with the monitor that started them, even when it is killed with SIGKILL: a real
holder process, a real watcher group (a process and its child), SIGKILL to the holder."""
import io
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
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


# An environment job's build step: make or pip, and a compiler they started; it prints the step's and the
# compiler's pids
BUILDER = """
import sys
from dlbench import lifeline
lifeline.run_tied(["sh", "-c", "sleep 600 & echo $$ $!; wait"], sys.stdout)
"""


def test_a_build_step_ends_with_its_job_when_the_job_is_killed():
    builder = _python(BUILDER)
    step, compiler = map(int, builder.stdout.readline().split())
    try:
        assert not _gone(step, 0.5) and not _gone(compiler, 0)  # the job lives: so does its build
        builder.send_signal(signal.SIGKILL)
        builder.wait(timeout=30)
        assert _gone(step, 30) and _gone(compiler, 30), "the build outlived its job"
    finally:
        builder.kill()
        builder.wait()
        for pid in (step, compiler):
            if psutil.pid_exists(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_failed_build_step_raises_as_subprocess_run_does(tmp_path):
    with (tmp_path / "log").open("w") as log, pytest.raises(subprocess.CalledProcessError) as failed:
        lifeline.run_tied(["sh", "-c", "echo compiling; exit 3"], log)
    assert failed.value.returncode == 3 and (tmp_path / "log").read_text() == "compiling\n"


def test_the_scratch_of_a_run_whose_monitor_was_killed_is_swept_and_a_live_ones_kept(tmp_path):
    cells = [tmp_path / "results" / "runs" / "pytorch" / "mnist-generated" / network / "cpu" / "fp32" / "train"
             for network in ("lenet", "alexnet")]
    dead, live, unlocked = cells[0] / ".dlbench-dead", cells[1] / ".dlbench-live", cells[1] / ".dlbench-new"
    for scratch in (dead, live, unlocked):
        scratch.mkdir(parents=True)
    (dead / "lifeline").touch()  # its monitor and runner were SIGKILLed: nobody holds its lock
    holder = _python(HOLDER, live)  # a monitor that lives
    holder.stdout.readline()
    try:
        said = io.StringIO()
        lifeline.sweep(cells[0], said)
        assert not dead.exists() and live.exists() and unlocked.exists()
        assert said.getvalue() == f"removed {dead}: the scratch of a run whose monitor was killed\n"
    finally:
        holder.kill()
        holder.wait()
