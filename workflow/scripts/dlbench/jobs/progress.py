"""What a workflow run says while it runs: before the first job, how many runs it will make and roughly how long
they will take on this machine; then a line per finished run (framework, cell, status, images/s) with the share
done and the time left.

Started by the Snakefile's ``onstart`` in Snakemake's own process (never in a job), it watches the planned
records appear: a run's record is written in one rename when its job ends, on this machine or, through a cluster
profile, on a shared file system. The estimate of a run comes from the records a previous run of the same cell
left in ``results/runs`` (their whole-run wall time) where there are some, else from :data:`START_SECONDS` and
:data:`FIRST_GUESS_TFLOPS`: a guess, said to be one.
"""
from __future__ import annotations

import statistics
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..files import Unreadable
from ..record.compute import flops_per_image
from ..record.io import read_record
from ..registry import REGISTRY
from ..spec import RunSpec

# A run's time on a 2-core CPU besides its steps, in seconds: the median of its records' wall time less warm-up and
# timed window (interpreter, framework import, model build, the monitor, the record) over .test/config-tiny's runs on
# this project's 2-core VM (dlbench 0.34.0, 65 runs), and a second for Snakemake's start of the job. tensorflow-nn and
# cudnn (not in that config): their environment's framework's.
START_SECONDS = {"pytorch": 5.0, "tensorflow": 5.3, "mxnet": 2.9, "caffe": 1.8, "cntk": 2.4,
                 "keras-tensorflow": 5.1, "keras-jax": 5.7, "keras-torch": 5.4, "onnxruntime": 7.9,
                 "tensorflow-nn": 5.3, "cudnn": 5.0}
# The rate a run's steps reach, in TFLOP/s, by processor: on a CPU the median of the same runs' achieved rate (0.036;
# quartiles 0.019 and 0.050); on GPUs a first guess, a tenth of a P100's fp32 peak (small batches keep far from it).
FIRST_GUESS_TFLOPS = {"cpu": 0.036, "gpu": 1.0}
POLL_SECONDS = 2.0


@dataclass(frozen=True)
class Planned:
    record: Path
    spec: RunSpec
    seconds: float  # the estimate
    measured: bool  # from a previous run's records, not the first guess

    @property
    def label(self) -> str:
        spec = self.spec
        return (f"{spec.framework} {spec.dataset} {spec.network} {spec.device} {spec.variant} {spec.task} "
                f"rep{spec.repetition}")


def _steps(spec: RunSpec) -> float:
    """Images through the network in a run: its iterations' batches, and an inference run's single images."""
    images = (spec.iterations + spec.warmup_iterations) * spec.batch_size_global
    return images + (spec.latency_calls if spec.task == "inference" else 0)


def first_guess(spec: RunSpec) -> float:
    rate = FIRST_GUESS_TFLOPS["gpu" if spec.gpus else "cpu"] * 1e12
    start = START_SECONDS.get(REGISTRY[spec.framework].base, max(START_SECONDS.values()))  # an old release: today's
    return start + _steps(spec) * flops_per_image(spec) / rate


def previous_seconds(record: Path) -> float | None:
    """The median wall time of the records a previous run of the record's cell left (any repetition)."""
    walls = []
    for path in record.parent.glob("rep*.json"):
        try:
            wall = read_record(path)["timing"].get("wall_seconds")
        except (Unreadable, KeyError):
            continue
        if wall:
            walls.append(wall)
    return statistics.median(walls) if walls else None


def plan(runs: list[tuple[str, dict]]) -> list[Planned]:
    """The runs a workflow run will make, as (record path, spec as the train job's params hold it), estimated."""
    planned = []
    for record, spec in runs:
        spec = RunSpec(**spec)
        seconds = previous_seconds(Path(record))
        planned.append(Planned(Path(record), spec, seconds or first_guess(spec), seconds is not None))
    return planned


def _duration(seconds: float) -> str:
    minutes = seconds / 60
    return f"{seconds:.0f} s" if minutes < 1 else f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def announce(planned: list[Planned], parallel: int) -> str:
    """The line said before the first job."""
    if not planned:
        return "dlbench: no runs to make"
    frameworks = Counter(run.spec.framework for run in planned)
    measured = sum(run.measured for run in planned)
    source = ("from the previous runs' times" if measured == len(planned) else
              "a first guess from dlbench's table of a 2-core CPU's" if not measured else
              f"from the previous runs' times for {measured}, a first guess for {len(planned) - measured}")
    total = sum(run.seconds for run in planned) / parallel
    return (f"dlbench: {len(planned)} runs to make ({', '.join(f'{f} {n}' for f, n in sorted(frameworks.items()))}); "
            f"about {_duration(total)} of runs on this machine, {parallel} at a time ({source})")


def finished_line(run: Planned, record: dict | None, error: str | None, done: int, total: int, left: float) -> str:
    if record is None:
        outcome = f"unreadable ({error})"
    elif record["status"] == "ok":
        speed = record["timing"].get("images_per_second_mean")
        outcome = "ok" + (f", {speed:,.0f} images/s" if speed else "")
    else:
        outcome = f"{record['status']}: {(record['reason'].strip().splitlines() or ['?'])[0][:100]}"
    return (f"dlbench [{done:>{len(str(total))}}/{total} {100 * done // total:>3} %] {run.label}: {outcome}"
            + (f" · about {_duration(left)} left" if done < total else ""))


class Watcher(threading.Thread):
    """Prints :func:`finished_line` as each planned record is written (after ``started``: a rerun's old record
    does not count). Time left: the planned seconds still to run at the pace of the runs done since the first
    (environment builds and conversions before it are no run's pace), ``parallel`` at a time until then."""

    def __init__(self, planned: list[Planned], parallel: int, out=sys.stdout):
        super().__init__(daemon=True, name="dlbench-progress")  # ends with Snakemake's process
        self.pending, self.parallel, self.out = list(planned), parallel, out
        self.total, self.started = len(planned), time.time()
        self.watched = {run.record for run in planned}
        self.done, self.paced_seconds, self.first_done_at = 0, 0.0, None
        self._stopped = threading.Event()

    def poll(self) -> None:
        for run in list(self.pending):
            try:
                written = run.record.stat().st_mtime
            except OSError:
                continue
            if written < self.started:
                continue
            self.pending.remove(run)
            try:
                record, error = read_record(run.record), None
            except Unreadable as unreadable:
                record, error = None, str(unreadable)
            now, self.done = time.time(), self.done + 1
            if self.first_done_at is None:
                self.first_done_at = now
            else:
                self.paced_seconds += run.seconds
            # wall seconds per planned second
            pace = (now - self.first_done_at) / self.paced_seconds if self.paced_seconds else 1 / self.parallel
            left = pace * sum(pending.seconds for pending in self.pending)
            print(finished_line(run, record, error, self.done, self.total, left), file=self.out, flush=True)

    def expect(self, planned: list[Planned]) -> None:
        """Runs planned after the start (a repetitions decision's), watched as the first are; one not yet watched
        and whose record is still to be made counts once."""
        for run in planned:
            if run.record not in self.watched and not run.record.exists():
                self.watched.add(run.record)
                self.pending.append(run)
                self.total += 1

    def run(self) -> None:
        while self.pending and not self._stopped.wait(POLL_SECONDS):
            self.poll()

    def stop(self) -> None:
        """The last runs' lines, before the workflow's summary."""
        self._stopped.set()
        self.join()
        self.poll()


_watching: list[Watcher] = []  # this Snakemake process's, for :func:`stop`


def start(runs: list[tuple[str, dict]], parallel: int, out=sys.stdout) -> Watcher:
    """Say what the workflow run will make, and watch it being made."""
    planned = plan(runs)
    print(announce(planned, parallel), file=out, flush=True)
    watcher = Watcher(planned, parallel, out)
    watcher.start()
    _watching.append(watcher)
    return watcher


def expect(runs: list[tuple[str, dict]]) -> None:
    """More runs to watch (record path, spec), planned after the start: a repetitions checkpoint's. Snakemake asks
    for a decision each time it evaluates an input function; only runs not yet watched are estimated (which reads
    their cell's records)."""
    for watcher in _watching:
        watcher.expect(plan([run for run in runs if Path(run[0]) not in watcher.watched]))


def stop() -> None:
    """Called as the workflow ends (Snakefile's onsuccess and onerror): every run's line said."""
    while _watching:
        _watching.pop().stop()

