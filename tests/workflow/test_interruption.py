"""A run ends with its monitor, however the monitor ends: Ctrl-C, SIGTERM, SIGKILL (the OOM killer,
a scheduler). Within seconds no runner process is left, no scratch directory, and its cores are free."""
import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest
from dlbench.hardware import slots

from ..conftest import IN_FRAMEWORK, ROOT
from ..unit.run.test_monitor import spec

# The monitor as train.py runs it, in a process of its own: a PyTorch run that would take hours. Ctrl-C reaches it
# as it reaches a terminal's foreground job, also where the tests run in the background (a shell starts a background
# command with SIGINT ignored, and Python then installs no handler).
MONITOR = """
import json, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from pathlib import Path
from dlbench.run import monitor
from dlbench.spec import RunSpec
spec = RunSpec(**json.loads(sys.argv[1]))
monitor.run(spec, sys.executable, Path(sys.argv[2]), 3600, 20, "sha", lock_dir=Path(sys.argv[3]))
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.fixture
def started():
    """Every process a test starts ends with the test, whatever it asserted (they would train for hours)."""
    processes = []
    yield processes
    for process in processes:
        for child in [process, *process.children(recursive=True)] if process.is_running() else []:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()


def _start_training(tmp_path, run_spec, processes: int, started, **env_changes):
    """The monitor, once its runner trains; the monitor's descendants then."""
    log = tmp_path / "run" / "rep1.log"
    log.parent.mkdir()
    log.touch()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts"), **env_changes}
    # A session of its own, as a terminal's foreground job: Ctrl-C signals the whole group.
    monitor = subprocess.Popen([sys.executable, "-c", MONITOR, json.dumps(dataclasses.asdict(run_spec)), str(log),
                                str(tmp_path / "locks")], env=env, start_new_session=True)
    started.append(psutil.Process(monitor.pid))
    deadline = time.monotonic() + 120
    header = "warm-up), "  # the runner's header, printed when its model is built and the loop begins
    while time.monotonic() < deadline and header not in log.read_text():
        assert monitor.poll() is None, log.read_text()
        time.sleep(0.2)
    assert header in log.read_text(), log.read_text()
    time.sleep(0.5)
    tree = psutil.Process(monitor.pid).children(recursive=True)
    started.extend(tree)
    # torchrun's ranks (the processes running dlbench.run.runner) are in sessions of their own
    runners = [p for p in tree if "dlbench.run.runner" in " ".join(p.cmdline()) and "torch.distributed.run" not in
               " ".join(p.cmdline())]
    assert len(runners) == processes, [p.cmdline() for p in tree]
    return monitor, [p.pid for p in tree], log


@pytest.mark.parametrize("signum, to_group", [(signal.SIGINT, True), (signal.SIGTERM, False),
                                              (signal.SIGKILL, False)], ids=["ctrl-c", "sigterm", "sigkill"])
def test_a_stopped_monitor_leaves_no_runner_no_scratch_and_frees_its_cores(tmp_path, signum, to_group, started):
    monitor, descendants, log = _start_training(tmp_path, spec(iterations=10**7, threads=1), 1, started)
    stopped = time.monotonic()
    if to_group:
        os.killpg(monitor.pid, signum)
    else:
        monitor.send_signal(signum)
    monitor.wait(timeout=120)  # generous: a loaded machine slows the stop, and the test asserts what is left
    while any(map(_alive, descendants)) and time.monotonic() - stopped < 30:
        time.sleep(0.1)
    assert not [pid for pid in descendants if _alive(pid)], log.read_text()[-2000:]
    assert not list(log.parent.glob(".dlbench-*"))
    assert not (log.parent / "rep1.json").exists()
    with slots.hold("core", slots.cores()[:1], 1, tmp_path / "locks", wait_s=0):
        pass  # the run's core is free again
    if signum != signal.SIGKILL:
        assert "the runner was stopped; no record" in log.read_text()


def _kill_and_expect_all_gone(monitor, descendants, log) -> None:
    """SIGKILL the monitor; within 10 s none of its descendants is left."""
    monitor.send_signal(signal.SIGKILL)
    monitor.wait()
    deadline = time.monotonic() + 10
    while any(map(_alive, descendants)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in descendants if _alive(pid)], log.read_text()[-2000:]


def test_a_killed_monitor_ends_every_rank_of_a_data_parallel_run(tmp_path, started):
    monitor, descendants, log = _start_training(
        tmp_path, spec(device="2xcpu", batch_size_global=32, iterations=10**7, threads=2), 2, started)
    _kill_and_expect_all_gone(monitor, descendants, log)
    assert not list(log.parent.glob(".dlbench-*"))


def test_a_killed_monitor_ends_every_mpi_rank_of_a_cntk_run(tmp_path, started):
    """mpiexec starts CNTK's ranks in process groups of their own: each watches the lifeline itself
    (in a step of a minute, none would see the runner's end before the step's)."""
    monitor, descendants, log = _start_training(
        tmp_path, spec(framework="cntk", device="2xcpu", batch_size_global=32, iterations=10**7, threads=2), 1,
        started, DLBENCH_WORKER_PYTHON=sys.executable, CNTK_STANDIN_STEP_S="60",  # the CNTK stand-in
        PYTHONPATH=os.pathsep.join([str(IN_FRAMEWORK / "cntk_standin"), str(ROOT / "workflow" / "scripts")]))
    ranks = [p for p in map(psutil.Process, descendants) if "cntk_worker.py" in " ".join(p.cmdline())
             and "mpiexec" not in p.cmdline()[0]]
    assert len(ranks) == 2 and all(rank.pid == os.getpgid(rank.pid) for rank in ranks)
    _kill_and_expect_all_gone(monitor, descendants, log)


def test_a_runner_holds_its_cores_for_as_long_as_it_lives(tmp_path, started):
    """A runner that cannot watch the lifeline (a stand-in that only sleeps) outlives a killed
    monitor: its cores stay locked until it ends, so no other run is measured beside it."""
    fake_python = tmp_path / "python"
    fake_python.write_text("#!/bin/sh\nexec sleep 600\n")
    fake_python.chmod(0o755)
    log = tmp_path / "run" / "rep1.log"
    log.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts")}
    code = MONITOR.replace("sys.executable", repr(str(fake_python)))
    monitor = subprocess.Popen([sys.executable, "-c", code, json.dumps(dataclasses.asdict(spec(threads=1))), str(log),
                                str(tmp_path / "locks")], env=env)
    started.append(psutil.Process(monitor.pid))
    deadline = time.monotonic() + 60
    while not psutil.Process(monitor.pid).children() and time.monotonic() < deadline:
        time.sleep(0.1)
    runner = psutil.Process(monitor.pid).children()[0]
    started.append(runner)
    held_core = log.read_text().split("cores ")[1].split()[0]
    monitor.send_signal(signal.SIGKILL)
    monitor.wait()
    with pytest.raises(slots.SlotsBusy), slots.hold("core", [held_core], 1, tmp_path / "locks", wait_s=0.5,
                                                    log=lambda line: None):
        pass
    runner.kill()
    runner.wait(timeout=10)
    with slots.hold("core", [held_core], 1, tmp_path / "locks", wait_s=0):
        pass


@pytest.mark.slow
def test_a_killed_snakemake_leaves_no_run_behind(tmp_path, started):
    """SIGKILL of Snakemake (which can then stop none of its jobs): within seconds the monitor sees it gone and
    stops its run, so that no runner trains on unseen holding the cores the next Snakemake waits for."""
    config = {"frameworks": ["pytorch"], "repetitions": 1, "environment": "current", "threads": {"cpu": 1},
              "benchmarks": [{"dataset": "mnist", "data": "synthetic", "networks": ["lenet"], "iterations": 10**7,
                              "warmup_iterations": 1}]}
    (tmp_path / "config.yaml").write_text(json.dumps(config))
    record = tmp_path / "results/runs/pytorch/mnist-synthetic/lenet/cpu/fp32/train/rep1.json"
    workflow = subprocess.Popen([sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"),
                                 "--directory", str(tmp_path), "--configfile", str(tmp_path / "config.yaml"),
                                 "--cores", "2", str(record.relative_to(tmp_path))],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(psutil.Process(workflow.pid))
    log = record.with_suffix(".log")

    def runner_started() -> list[psutil.Process]:
        tree = psutil.Process(workflow.pid).children(recursive=True)
        with contextlib.suppress(psutil.Error):
            return tree if any("dlbench.run.runner" in " ".join(process.cmdline()) for process in tree) else []
        return []

    deadline = time.monotonic() + 180
    while not (tree := runner_started()) and time.monotonic() < deadline:
        assert workflow.poll() is None
        time.sleep(0.5)
    started.extend(tree)
    assert tree, "no runner started within 180 s"
    workflow.send_signal(signal.SIGKILL)
    workflow.wait()
    deadline = time.monotonic() + 10
    while any(_alive(process.pid) for process in tree) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [process.pid for process in tree if _alive(process.pid)], log.read_text()[-2000:]
    assert "snakemake (pid " in log.read_text() and "is gone: stopping this run" in log.read_text()
    assert not record.exists() and not list(log.parent.glob(".dlbench-*"))
