"""What a workflow run says before its first job and as each run ends (dlbench.jobs.progress)."""
import dataclasses
import io
import os
import time

from dlbench.jobs import progress
from dlbench.record.io import write_record
from dlbench.spec import RunSpec

from ..tables.test_tables import record

SPEC = RunSpec("pytorch", "mnist-generated", "lenet", "cpu", 1, 64, 20, 10, 0.01, 2)


def _path(root, spec: RunSpec):
    return (root / "results" / "runs" / spec.framework / spec.dataset / spec.network / spec.device / spec.variant
               / spec.task / f"rep{spec.repetition}.json")


def test_runs_of_a_cell_measured_before_are_estimated_from_their_records_the_others_guessed(tmp_path):
    earlier = record(repetition=1)  # wall_seconds 3.0
    write_record(earlier, tmp_path / "results" / "runs" / "pytorch" / "mnist-generated" / "lenet" / "cpu" / "fp32"
                 / "train" / "rep1.json")
    again = dataclasses.replace(SPEC, repetition=2)
    new = dataclasses.replace(SPEC, framework="tensorflow")
    planned = progress.plan([(str(_path(tmp_path, again)), dataclasses.asdict(again)),
                             (str(_path(tmp_path, new)), dataclasses.asdict(new))])
    assert (planned[0].seconds, planned[0].measured) == (3.0, True)
    assert not planned[1].measured and planned[1].seconds > progress.START_SECONDS["tensorflow"]
    said = progress.announce(planned, parallel=1)
    assert said.startswith("dlbench: 2 runs to make (pytorch 1, tensorflow 1); about ")
    assert "1 at a time (from the previous runs' times for 1, a first guess for 1)" in said
    assert progress.announce([], 1) == "dlbench: no runs to make"


def test_each_run_written_since_the_start_gives_a_line_with_the_share_done_and_the_time_left(tmp_path):
    specs = [dataclasses.replace(SPEC, repetition=k) for k in (1, 2, 3)]
    paths = [_path(tmp_path, spec) for spec in specs]
    write_record(record(repetition=1), paths[0])  # a rerun's old record: not done by this run
    os.utime(paths[0], (time.time() - 60, time.time() - 60))
    out = io.StringIO()
    planned = progress.plan([(str(path), dataclasses.asdict(spec)) for path, spec in zip(paths, specs, strict=True)])
    watcher = progress.Watcher(planned, parallel=1, out=out)
    watcher.poll()
    assert out.getvalue() == ""
    write_record(record(repetition=2, speed=1234.5), paths[1])
    write_record(record(repetition=1, status="failed", reason="RuntimeError: out of memory\nmore"), paths[0])
    watcher.poll()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("dlbench [1/3  33 %] pytorch mnist-generated lenet cpu fp32 train rep1: failed: "
                               "RuntimeError: out of memory · about ")
    assert lines[1].startswith("dlbench [2/3  66 %] pytorch mnist-generated lenet cpu fp32 train rep2: ok, "
                               "1,234 images/s · about ")
    (tmp_path / "damaged").write_text("{")
    os.replace(tmp_path / "damaged", paths[2])
    watcher.poll()
    assert out.getvalue().splitlines()[2].startswith("dlbench [3/3 100 %] pytorch mnist-generated lenet cpu fp32 "
                                                     "train rep3: unreadable (")
    assert "left" not in out.getvalue().splitlines()[2] and not watcher.pending


def test_runs_planned_after_the_start_join_the_count_once(tmp_path):
    specs = [dataclasses.replace(SPEC, repetition=k) for k in (1, 2, 3, 4)]
    paths = [_path(tmp_path, spec) for spec in specs]
    runs = [(str(path), dataclasses.asdict(spec)) for path, spec in zip(paths, specs, strict=True)]
    out = io.StringIO()
    watcher = progress.Watcher(progress.plan(runs[:2]), parallel=1, out=out)
    write_record(record(repetition=4), paths[3])  # made before: not a run of this invocation
    watcher.expect(progress.plan(runs[1:]))  # rep2 watched already
    assert watcher.total == 3
    write_record(record(repetition=3), paths[2])
    watcher.poll()
    assert out.getvalue().startswith("dlbench [1/3  33 %] pytorch mnist-generated lenet cpu fp32 train rep3: ok")
