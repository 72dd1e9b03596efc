"""The parent process of a run: start the runner, sample it, enforce a timeout, build the record (the rule's
script, ``workflow/scripts/train.py``, writes it).

A record is built in every case: ``ok``, ``failed`` (exception, crash, timeout; the reason
ends with the last lines of the log) or ``unavailable`` (framework not installed or not
implemented, environment not built, too few GPUs). Unknown values are ``null`` with a reason
under the section's ``reasons``, never 0. A status is data, never part of a reason's words: tables
write "<status>: <reason>" where they show one.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil

from .. import files, formats, lifeline, paths
from ..envs import WORKER_PYTHON_VARIABLE
from ..hardware import cluster, host, slots
from ..hardware.gpu import GpuProbe, inventory
from ..hardware.sampler import Sampler
from ..record.build import build_record, series
from ..spec import RunSpec
from ..tasks import window_marks
from . import launch

LOG_TAIL_LINES = 15


def _now(timespec: str = "seconds") -> str:
    return datetime.now(UTC).isoformat(timespec=timespec)


def _log_tail(log_path: Path) -> str:
    try:
        lines = log_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL_LINES:])


def runner_environment(threads: int, gpus: list[str], worker_python: str | None = None,
                       precision: str = "fp32") -> dict:
    """Thread counts for every library the frameworks use, the job's own GPUs only (none for a CPU
    run), the interpreter of a framework that runs in a worker process (CNTK), TF32 off in cuDNN and
    cuBLAS unless the run's precision is tf32, and JAX allocating what it uses (by default it takes
    75 % of the GPU at start, which the GPU-memory figure would report)."""
    env = dict(os.environ)
    for variable in (lifeline.VARIABLE, window_marks.VARIABLE):  # only the monitor that starts a runner gives these
        env.pop(variable, None)
    if worker_python:
        env[WORKER_PYTHON_VARIABLE] = worker_python
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    env = paths.with_package(env)
    env["PYTHONUNBUFFERED"] = "1"
    env["CUDA_VISIBLE_DEVICES"] = ",".join(gpus)
    if precision == "tf32":
        env.pop("NVIDIA_TF32_OVERRIDE", None)
    else:
        env["NVIDIA_TF32_OVERRIDE"] = "0"
    env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    return env


class DevicesMissing(Exception):
    """The node has fewer GPUs than the run's device asks for."""


class Interrupted(BaseException):
    """SIGTERM or SIGHUP reached the monitor; like KeyboardInterrupt, no error handler catches it."""


def workflow_process() -> psutil.Process | None:
    """The Snakemake process this job runs under: the nearest ancestor that runs snakemake (its console
    script, or ``python -m snakemake``), not a job's shell whose command names a .snakemake/ script."""
    for ancestor in psutil.Process().parents():
        with contextlib.suppress(psutil.Error):
            if any(Path(part).name == "snakemake" for part in ancestor.cmdline()[:3]):
                return ancestor
    return None


class OrphanWatch(threading.Thread):
    """Ends the monitor (SIGTERM to itself: its run stops as on any interruption) once the Snakemake process
    it runs under is gone: a SIGKILLed Snakemake cannot stop its jobs, which would train on unseen, holding
    their devices from the next Snakemake until their timeout."""

    INTERVAL_S = 1.0

    def __init__(self, workflow: psutil.Process):
        super().__init__(daemon=True)
        self.workflow, self.done = workflow, threading.Event()

    def gone(self) -> bool:
        """Ended: no longer running, or a zombie its parent has not reaped yet."""
        try:
            return not self.workflow.is_running() or self.workflow.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    def run(self) -> None:
        while not self.done.wait(self.INTERVAL_S):
            if self.gone():
                with contextlib.suppress(OSError):
                    print(f"snakemake (pid {self.workflow.pid}) is gone: stopping this run", file=sys.stderr,
                          flush=True)
                os.kill(os.getpid(), signal.SIGTERM)
                return


@contextlib.contextmanager
def _interruptible():
    """SIGTERM and SIGHUP unwind the monitor through its cleanup, as SIGINT (KeyboardInterrupt) does; so does
    the end of the Snakemake process it runs under (:class:`OrphanWatch`)."""
    def interrupted(signum, frame):
        raise Interrupted(signal.Signals(signum).name)

    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {signum: signal.signal(signum, interrupted) for signum in (signal.SIGTERM, signal.SIGHUP)}
    workflow = workflow_process()
    watch = OrphanWatch(workflow) if workflow else None
    if watch:
        watch.start()
    try:
        yield
    finally:
        if watch:
            watch.done.set()
            watch.join()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def held_devices(device: str, wanted: int, threads: int, lock_dir: Path, wait_s: float | None, nvml, log):
    """The ``wanted`` GPUs (UUIDs) and ``threads`` cores a job on ``device`` holds for its life, given
    to no other job meanwhile (:mod:`dlbench.hardware.slots`), so that runs side by side never share a core.
    Yields them, and the lock descriptors for the job's child process to inherit."""
    def note(line: str) -> None:
        log.write(line + "\n")
        log.flush()

    with contextlib.ExitStack() as stack:
        gpus = slots.Held([], [])
        if wanted:
            node_gpus, error = inventory(nvml)
            if len(node_gpus) < wanted:
                raise DevicesMissing(f"{device} needs {wanted} GPU(s); this node has {len(node_gpus)}"
                                     + (f" ({error})" if error else ""))
            gpus = stack.enter_context(slots.hold("gpu", node_gpus, wanted, lock_dir, wait_s, note))
        node_cores = slots.cores()
        cores = stack.enter_context(slots.hold("core", node_cores, min(threads, len(node_cores)), lock_dir,
                                               wait_s, note))
        note(f"holding GPUs {gpus.devices or 'none'}, cores {','.join(cores.devices)}")
        yield gpus.devices, [int(core) for core in cores.devices], gpus.descriptors + cores.descriptors


def run(spec: RunSpec, python: str, log_path: Path, timeout_s: float, sample_hz: float,
        config_sha256: str, cannot_run: dict | None = None, nvml=None, worker_python: str | None = None,
        lock_dir: Path | None = None, slot_wait_s: float | None = None, ceiling: dict | None = None,
        series_at: Path | None = None, environment: dict | None = None) -> dict:
    """Run one training job under measurement, on GPUs and cores it holds alone, and return its record.
    ``series_at``: where to write, whatever happens, every sample and profiled step the record reduces
    (:func:`dlbench.record.build.series`); ``environment``: the one it runs in, as its record names it
    (:func:`dlbench.record.provenance.environment`).

    ``cannot_run`` (status and reason) records a run that cannot take place (its environment could not
    be built: unavailable; its dataset could not be had: failed) without starting anything.
    ``timeout_s`` bounds the run; ``slot_wait_s`` (None: unbounded) the wait for its devices before it.
    ``ceiling`` is the node's (:mod:`dlbench.run.ceiling`) that the run's ``ceiling_fraction`` divides by.
    An interruption (SIGINT, SIGTERM, SIGHUP) stops the runner and propagates: no record is made.
    """
    started_at, started = _now(), time.monotonic()
    os.environ.update(cluster.allocation_variables())  # what the runners' launchers and the record read
    local_processes = cluster.local_processes(spec.device)  # of the run's processes, those on this machine
    result, sampler, probe, cores, held = {}, None, GpuProbe([], nvml), [], {"held_from": None, "held_until": None}
    with open(log_path, "a") as log, _interruptible():
        if cannot_run:
            result = dict(cannot_run)
            log.write(f"{cannot_run['status']}: {cannot_run['reason']}\n")
        else:
            try:
                if spec.data_dir:  # before the devices are held: a damaged dataset is no run's to wait for
                    formats.check(Path(spec.data_dir))
                wanted = spec.gpus * local_processes
                with held_devices(spec.device, wanted, spec.threads, lock_dir or slots.lock_dir(), slot_wait_s, nvml,
                                  log) as (gpus, cores, locks):
                    held["held_from"] = _now("microseconds")
                    try:
                        probe = GpuProbe(gpus, nvml) if spec.gpus else GpuProbe.idle_gpus(nvml)
                        result, sampler = _measure(spec, python, log, timeout_s, sample_hz, probe, gpus, cores, locks,
                                                   worker_python, local_processes)
                    finally:  # the runner and its descendants are gone: the devices are free from here
                        held["held_until"] = _now("microseconds")
            except DevicesMissing as missing:
                result = {"status": "unavailable", "reason": str(missing)}
                probe.error = str(missing)
            except (slots.SlotError, formats.DamagedShard) as error:
                result = {"status": "failed", "reason": f"{type(error).__name__}: {error}"}
            except (KeyboardInterrupt, Interrupted) as interruption:
                log.write(f"interrupted ({type(interruption).__name__} {interruption}): the runner was stopped; "
                          "no record\n")
                raise
    if result["status"] == "failed" and not cannot_run:
        result["reason"] += "\nlast lines of the log:\n" + _log_tail(log_path)
    # The held interval: no other dlbench run held these cores and GPUs from held_from to held_until (a run that
    # waited for its devices started before it: started_at)
    held.update(started_at=started_at, finished_at=_now(), cores_held=cores)
    record = build_record(spec, result, sampler, probe, config_sha256, ceiling, time.monotonic() - started, held,
                          environment)
    if series_at:
        files.write_json(series_at, series(record["run"], spec, result, sampler))
    probe.close()
    return record


def stop_tree(pid: int, timeout_s: float = 10) -> None:
    """Kill a process and all its descendants (torchrun starts its ranks in sessions of their own, so
    a process group is not enough). Each is stopped before the tree is listed again, so none can
    fork a child that escapes the listing; then all are killed."""
    try:
        root = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return
    stopped: dict[int, psutil.Process] = {}
    while True:
        try:
            found = [p for p in (root, *root.children(recursive=True)) if p.pid not in stopped]
        except psutil.NoSuchProcess:
            found = []
        if not found:
            break
        for process in found:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.suspend()
            stopped[process.pid] = process
    for process in stopped.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(list(stopped.values()), timeout=timeout_s)


def _measure(spec: RunSpec, python: str, log, timeout_s: float, sample_hz: float, probe: GpuProbe,
             gpus: list[str], cores: list[int], locks: list[int], worker_python: str | None,
             local_processes: int) -> tuple[dict, Sampler | None]:
    """Start the runner on the held devices, sample it until it exits or times out; its result.

    The runner inherits the device locks and watches this process's lifeline (:mod:`dlbench.lifeline`).
    However the wait ends, the runner and its descendants are gone before the scratch directory is."""
    # Beside the log, not in /tmp: the processes of a run over several nodes all read the spec.
    lifeline.sweep(Path(log.name).parent, log)
    with (tempfile.TemporaryDirectory(prefix=lifeline.SCRATCH_PREFIX, dir=Path(log.name).parent) as scratch,
          lifeline.held(Path(scratch), log) as lifeline_environment):
        spec_path, result_path = Path(scratch, "spec.json"), Path(scratch, "result.json")
        spec.dump(spec_path)
        try:
            command = launch.runner_command(python, spec.framework, spec.device, [str(spec_path), str(result_path)])
        except launch.NotLaunchable as error:
            return {"status": "unavailable", "reason": f"{spec.device}: {error}"}, None
        # Processes on this machine share its held threads (torchrun --standalone).
        threads = max(1, spec.threads // local_processes)
        nodes = _nodes(spec, local_processes, log)
        log.write(f"runner: {' '.join(command)} (threads {threads}, timeout {timeout_s:.0f} s)\n")
        log.flush()
        marks = _window_marks(Path(scratch), log)
        launched_epoch, oom_kills = time.time(), host.oom_kills()
        environment = {**runner_environment(threads, gpus, worker_python, spec.precision), **lifeline_environment,
                       **(marks.environment if marks else {})}
        try:
            with started(command, log, cores, locks, environment) as process:
                # srun starts the processes of a run over nodes, outside this process's tree: none to sample
                sampler = None if nodes else Sampler(process.pid, probe, sample_hz, cores, host.Rapl(), marks)
                if sampler:
                    sampler.start()
                try:
                    returncode = wait_for_exit(process, timeout_s)
                except subprocess.TimeoutExpired:
                    timeout = f"timeout: no result after {timeout_s:.0f} s"
                    return {"status": "failed", "reason": timeout, **nodes}, sampler
                finally:
                    if sampler:
                        sampler.stop()
        except StartFailed as error:
            return {"status": "failed", "reason": f"cannot start the runner with {python}: {error}"}, None
        finally:
            if marks:
                marks.close()
        result = read_result(result_path, returncode, oom_kills)
        if returncode and spec.processes > 1 and result.get("status") == "ok":  # the first wrote, another failed
            result = {"status": "failed", "reason": f"a process of the group of {spec.processes} "
                                                    f"{exit_words(returncode)} after the first wrote its result (the "
                                                    "log says why)"}
        return {**result, "launched_epoch": launched_epoch, **nodes}, sampler


def _window_marks(scratch: Path, log) -> window_marks.Listener | None:
    try:
        return window_marks.Listener(scratch / "window-marks")
    except OSError as error:  # a file system without FIFOs: the window is sampled on the sampler's clock alone
        log.write(f"no window marks ({error}): the timed window's bounds are the host samples nearest inside it\n")
        return None


def _nodes(spec: RunSpec, local_processes: int, log) -> dict:
    """For a run whose processes srun starts on the nodes of an allocation: the nodes, whether they are one machine
    (then they share its cores: the run is no measure of nodes), and why this monitor samples none of them."""
    if local_processes == spec.processes:
        return {}
    unsampled = (f"its {spec.processes} processes ran on the allocation's nodes, started by srun: the monitor on "
                 f"{socket.gethostname()} samples only the processes it starts")
    try:
        machines = cluster.allocation_machines(spec.nodes)
    except (OSError, subprocess.SubprocessError) as error:
        log.write(f"the allocation's nodes could not be told apart ({error}): the record does not name them\n")
        return {"nodes": None, "nodes_share_machine": None, "unsampled": unsampled}
    shared = len(set(machines.values())) < len(machines)
    log.write(f"nodes: {', '.join(machines)}{' (one machine: they share its cores)' if shared else ''}\n")
    return {"nodes": list(machines), "nodes_share_machine": shared, "unsampled": unsampled}


FULL_DISK_BYTES = 16 * 2**20  # less free space than this where the result was to be: a disk full is likely


def read_result(path: Path, returncode: int, oom_kills_before: int | None) -> dict:
    """The runner's result, or a failed one that says why there is none: how the runner ended, and a full
    disk where the result's file system has (almost) no room left."""
    free = files.free_bytes(path.parent)
    disk = "" if free is None else f" ({free / 2**20:.1f} MiB free on the file system of {path.parent})"
    if path.exists():
        try:
            return files.read_json(path)
        except files.Unreadable as error:
            return {"status": "failed", "reason": f"result unreadable: {error}; disk full, or a kill mid-write?{disk}"}
    full = f"; disk full{disk}" if free is not None and free < FULL_DISK_BYTES else ""
    return {"status": "failed", "reason": f"runner {exit_words(returncode, oom_kills_before)}, with no result{full}"}


# What a runner's death by a signal most likely means
SIGNAL_CAUSES = {
    signal.SIGKILL: "the kernel's OOM killer (out of memory), or a kill -9 by a scheduler or a user",
    signal.SIGBUS: "a memory-mapped file shorter than its contents say: a damaged or truncated data file (an LMDB)",
    signal.SIGSEGV: "a crash in native code: a damaged data file, or a bug in the framework",
    signal.SIGABRT: "native code aborted on a failed check (the log's last lines say which)",
}


def exit_words(returncode: int, oom_kills_before: int | None = None) -> str:
    """How a process ended, in words: its exit code, or the signal that killed it and its likely cause (for
    SIGKILL, the memory cgroup's OOM-kill counter, read before the run and now, tells)."""
    if returncode >= 0:
        return f"exited with code {returncode}"
    try:
        killer = signal.Signals(-returncode)
    except ValueError:
        return f"was killed by signal {-returncode}"
    words = f"was killed by {killer.name} (signal {-returncode})"
    oom_kills = host.oom_kills() if killer == signal.SIGKILL and oom_kills_before is not None else None
    if oom_kills is not None and oom_kills > oom_kills_before:
        return f"{words}: the kernel's OOM killer ended {oom_kills - oom_kills_before} process(es) of this job's " \
               "memory cgroup during the run (out of memory)"
    cause = SIGNAL_CAUSES.get(killer)
    if oom_kills is not None:
        cause += "; the memory cgroup counted no OOM kill during the run"
    return f"{words}: likely {cause}" if cause else words


def wait_for_exit(process: subprocess.Popen, timeout_s: float) -> int:
    """``process.wait(timeout_s)`` without its polling: CPython's waits for a child with a timeout by looking every
    50 ms, 20 wake-ups a second beside a run that trains on every core (what that costs: :class:`Sampler`). Here
    the kernel says when the child ends (a pidfd, Linux 5.3 on); elsewhere Popen's own wait."""
    try:
        pidfd = os.pidfd_open(process.pid)
    except (AttributeError, OSError):
        return process.wait(timeout=timeout_s)
    try:
        ended, _, _ = select.select([pidfd], [], [], timeout_s)
    finally:
        os.close(pidfd)
    if not ended:
        raise subprocess.TimeoutExpired(process.args, timeout_s)
    return process.wait()


class StartFailed(Exception):
    """The child process could not be started (its interpreter is missing, say)."""


@contextlib.contextmanager
def started(command: list[str], log, cores: list[int], locks: list[int], environment: dict):
    """A child process on the held ``cores``, inheriting the device ``locks``, in a session of its own.
    However the block ends (a timeout, an interruption, the parent's own error) the child and its
    descendants are gone after it, unless the child had exited by itself."""
    own_cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)  # this thread's cores, which the child inherits
    try:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   pass_fds=locks, env=environment)
    except OSError as error:
        raise StartFailed(error) from error
    finally:
        os.sched_setaffinity(0, own_cores)
    try:
        yield process
    finally:
        if process.poll() is None:
            stop_tree(process.pid)
            process.wait()
