"""The runner's side of a framework that trains in a worker process under an older CPython (CNTK, the thesis's
MXNet: workflow/scripts/workers/, whose worker_protocol.py says the commands).

The runner stays on the workflow's Python and drives the worker over a socket: ``step()`` sends one command and
returns a callable that reads the step's reply, so the next command is queued while a step runs (one step in
flight, as the other backends). The worker replies when its step has finished. Its interpreter is the framework
environment's, passed in ``DLBENCH_WORKER_PYTHON`` by the monitor, else one of that CPython on PATH or in pyenv.
A worker may be several processes, MPI's ranks (CNTK's :meth:`WorkerHarness.command_line`): each connects on its
own, and each gets the same commands.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import socket
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .. import envs, lifeline, networks
from ..envs import elf
from ..hardware import gpu
from ..registry import REGISTRY
from ..spec import RunSpec
from . import GpuCode, Unavailable, inputs

WORKERS = Path(__file__).resolve().parents[2] / "workers"  # outside the package: the workers' Python is older


def worker_python(environment: str) -> str:
    python = os.environ.get(envs.WORKER_PYTHON_VARIABLE)
    if python:
        return python
    try:
        return envs.find_worker_python(environment)
    except LookupError as error:
        raise Unavailable(str(error)) from error


def describe(python: str, script: Path, framework: str) -> dict:
    """The worker interpreter's Python, framework and package versions, for the run's record."""
    found = subprocess.run([python, str(script), "--describe"], check=False, capture_output=True, text=True)
    if found.returncode != 0:
        raise Unavailable(f"{framework} cannot be imported: {(found.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(found.stdout.splitlines()[-1])


def library_gpu_code(environment: str, script: Path, framework: str, library: str) -> GpuCode | str:
    """The GPU code in the fatbinary of a library of the worker's environment (``library``: its glob under
    site-packages; a framework of those days does not report what it was compiled for), with the CUDA build the worker
    describes, and the run's GPUs as NVML lists them."""
    python = worker_python(environment)
    prefix = Path(python).parent.parent
    found = next(prefix.glob(f"lib/python3*/site-packages/{library}"), None)
    if found is None:
        return f"no {library} in {prefix}"
    described = describe(python, script, framework)
    return GpuCode.from_arch_names(f"{framework} {described['framework_version']}", described["cuda_build"],
                                   elf.fatbin_architectures(found), gpu.visible_gpus())


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def synthetic_batch_files(spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
    """The run's synthetic batch, normalised, as .npy files in ``scratch`` for the worker to keep resident: the
    config's ``synthetic_images`` and ``synthetic_labels``."""
    images, labels = inputs.normalised_synthetic_batch(spec, description)
    files = {"synthetic_images": str(scratch / "images.npy"), "synthetic_labels": str(scratch / "labels.npy")}
    np.save(files["synthetic_images"], images)
    np.save(files["synthetic_labels"], labels)
    return files


class DescriptionPlanner:
    """A description as JSON for a worker to build: each leaf its kind, its fields, as :mod:`dlbench.networks`
    has them, and its input's shape without the batch axis (``in_shape``: (C, H, W), or (steps, features)); the
    containers' children."""

    def __getattr__(self, kind: str):
        return lambda layer, shape: {"op": kind, **vars(layer), "in_shape": list(shape)}

    def maxpool(self, layer, shape):
        """With each spatial axis's padding (before, after) for a framework that pools unpadded windows."""
        return {"op": "maxpool", **vars(layer), "pads": networks.pool_padding(layer, shape), "in_shape": list(shape)}

    def name_leaf(self, node, name):
        """A leaf's name in the description (networks.Named): a worker's profiler finds its nodes by it."""
        return {**node, "name": name}

    def sequential(self, children):
        return {"op": "sequential", "children": children}

    def concat(self, branches):
        return {"op": "concat", "branches": branches}

    def residual(self, body, shortcut):
        return {"op": "residual", "body": body, "shortcut": shortcut}


def description_plan(description: networks.Network) -> dict:
    """The description for a worker to build: its layers as they are, each leaf named as in every framework
    (``conv1``: :class:`networks.Named`), by which a worker's profiler tells its layers."""
    return networks.build(description, networks.Named(DescriptionPlanner()))


class WorkerProfiler:
    """A layer profiler whose framework's profiler runs in the worker, started and stopped there around the steps
    taken under it (none in flight either side); ``collect(reply)`` reads the worker's reply to its stop."""

    def __init__(self, harness: WorkerHarness):
        self.harness = harness

    def collect(self, stopped: dict) -> None:
        raise NotImplementedError

    def __enter__(self):
        self.harness.synchronize()
        self.harness.command("profile start")
        return self

    def __exit__(self, *exception) -> None:
        self.harness.synchronize()
        stopped = self.harness.command("profile stop")
        if exception[0] is None:
            self.collect(stopped)


class WorkerHarness:
    """A run's worker: started with its config (``worker.json`` in a scratch directory), connected, and checked to
    have built the description's trainable parameters. ``FRAMEWORK`` names it in errors, ``SCRIPT`` is its file
    in workers/."""

    FRAMEWORK: str
    SCRIPT: Path

    def __init__(self, spec: RunSpec, description: networks.Network):
        python = worker_python(REGISTRY[spec.framework].environment)
        # In the monitor's scratch directory where there is one: its lifeline removes it with the run even
        # when the run is killed, which closes nothing.
        lifeline_file = os.environ.get(lifeline.VARIABLE)
        self.scratch = tempfile.TemporaryDirectory(prefix=f"dlbench-{spec.framework}-",
                                                   dir=Path(lifeline_file).parent if lifeline_file else None)
        self.process, self.connections, self.ranks = None, [], []
        self.batch_size = spec.batch_size_global
        try:
            self._start(spec, description, python, Path(self.scratch.name))
        except BaseException:
            self.close()  # the worker and its directory go with the run that failed to start
            raise

    def worker_config(self, spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
        """What the worker builds and reads, as JSON (``scratch``: where it can find files written for it)."""
        raise NotImplementedError

    def command_line(self, python: str, spec: RunSpec, config_path: Path, address: str) -> tuple[list[str], int]:
        """The command that starts the worker, and how many processes (ranks) will connect."""
        return [python, str(self.SCRIPT), str(config_path), address], 1

    def listener(self, spec: RunSpec, name: str) -> tuple[socket.socket, str]:
        """The socket the worker connects to, and its address for it: in Linux's abstract namespace (no file
        to leave behind, no limit of 108 bytes on the scratch's path)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(f"\0{name}")
        return listener, f"@{name}"

    def _start(self, spec: RunSpec, description: networks.Network, python: str, scratch: Path) -> None:
        (scratch / "worker.json").write_text(json.dumps(self.worker_config(spec, description, scratch)))
        listener, address = self.listener(spec, f"{scratch.name}-{os.getpid()}")
        command, count = self.command_line(python, spec, scratch / "worker.json", address)
        print(f"{self.FRAMEWORK} worker: {' '.join(command)}", flush=True)
        listener.listen()
        environment = dict(os.environ)
        if os.geteuid() == 0:  # OpenMPI refuses root unless told; containers and CI often are root
            environment.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        # A format's relative paths (CNTK's map file's images) are the format directory's: opened from there.
        self.process = subprocess.Popen(command, cwd=spec.data_dir or scratch, env=environment)
        atexit.register(self.close)  # a runner that ends without closing (an error outside the run's block)
        self.ranks = self._connect(listener, count)
        self.pending, self.input_wait = 0, 0.0
        self.hellos = self._replies()
        for hello in self.hellos:
            if "unavailable" in hello:
                raise Unavailable(hello["unavailable"])
        self.pids = {self.process.pid, *(hello["pid"] for hello in self.hellos)}
        expected = networks.trainable_parameters(description)
        if self.hellos[0]["parameters"] != expected:
            raise RuntimeError(f"the {self.FRAMEWORK} {description.name} has {self.hellos[0]['parameters']:,} "
                               f"trainable parameters, the description {expected:,}")

    def _connect(self, listener: socket.socket, count: int) -> list:
        """Each rank's connection (reader, writer), as they connect (their replies name their rank); a
        worker that exits first fails the run."""
        listener.settimeout(1)
        ranks = []
        with listener:
            while len(ranks) < count:
                try:
                    connection, _ = listener.accept()
                except TimeoutError:
                    if self.process.poll() is not None:
                        raise self._worker_exited() from None
                    continue
                connection.settimeout(None)
                self.connections.append(connection)
                ranks.append((connection.makefile("r"), connection.makefile("w")))
        return ranks

    def close(self, timeout_s: float = 30) -> None:
        """Let the workers end (the end of their commands; MPI's finalize) before the runner does, so
        that none outlives the run's hold on its devices; then remove the worker's directory."""
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_WR)
        for stream in (*self.connections, *(stream for rank in self.ranks for stream in rank)):
            with contextlib.suppress(OSError):  # a writer's unsent line to a worker that has died
                stream.close()
        self.connections, self.ranks = [], []
        if self.process is not None:
            atexit.unregister(self.close)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.terminate()  # mpiexec passes it on to its ranks; SIGKILL would orphan them
                try:
                    self.process.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        self.scratch.cleanup()

    def _worker_exited(self) -> RuntimeError:
        return RuntimeError(f"the {self.FRAMEWORK} worker exited with code {self.process.wait()} (its error is in "
                            "the log)")

    def _send(self, command: str) -> None:
        try:
            for _, writer in self.ranks:
                writer.write(command + "\n")
                writer.flush()
        except (BrokenPipeError, ConnectionResetError):  # a worker died: as a reply that never comes
            raise self._worker_exited() from None

    def _replies(self) -> list[dict]:
        """One reply from every rank, in rank order."""
        try:
            lines = [reader.readline() for reader, _ in self.ranks]
        except ConnectionResetError:
            lines = [""]
        if not all(lines):
            raise self._worker_exited()
        return sorted(map(json.loads, lines), key=lambda reply: reply["rank"])

    def _wait_for_oldest_step(self) -> None:
        self.input_wait = self._replies()[0]["input_wait"]  # rank 0's, as the other frameworks'
        self.pending -= 1

    def step(self, command: str = "step"):
        self._send(command)
        self.pending += 1
        return self._wait_for_oldest_step

    def inference(self, batch_size: int):
        self.synchronize()
        self._send(f"inference {batch_size}")
        self._replies()
        return lambda: self.step("forward")

    def synchronize(self) -> None:
        while self.pending:
            self._wait_for_oldest_step()

    def command(self, command: str) -> dict:
        """Rank 0's reply to a command that no step is in flight behind."""
        return self.command_all(command)[0]

    def command_all(self, command: str) -> list[dict]:
        """Every rank's reply to a command that no step is in flight behind, in rank order."""
        self._send(command)
        return self._replies()

    def test_logits(self):
        """Rank 0's evaluation of the test split (its reader's centre crop, in stored order), which the worker
        stores beside its config."""
        self.synchronize()
        stored = self.command("test")
        logits, labels = np.load(stored["logits"]), np.load(stored["labels"])
        for start in range(0, len(labels), self.batch_size):
            yield logits[start:start + self.batch_size], labels[start:start + self.batch_size]

    def final_loss(self) -> float | None:
        """Rank 0's loss, once every rank is seen to hold the same weights (the group trained as one)."""
        self.synchronize()
        self._send("loss")
        replies = self._replies()
        sums = [reply["weights_sum"] for reply in replies]
        if not np.allclose(sums, sums[0], rtol=1e-6, atol=0):
            raise RuntimeError(f"{self.FRAMEWORK}'s ranks ended with different weights (sums {sums}): they did "
                               "not train as one")
        return replies[0]["loss"]

    def worker_cpu_seconds(self) -> float:
        """The workers' CPU time (user + system, from /proc; with mpiexec's), which the runner's own does
        not include."""
        return sum(_cpu_seconds(pid) for pid in self.pids)

    def allocator_peak_mib(self) -> None:
        return None  # neither worker's framework exposes its allocator's peak to Python

    def input_wait_seconds(self) -> float:
        """The worker's wait for its batches, as its replies report it."""
        return self.input_wait
