"""GPU and core slots on a fake node: concurrent jobs never share a device; a killed job frees its own."""
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta
from itertools import combinations
from pathlib import Path

import pytest
import torch
from dlbench.hardware import slots
from dlbench.record.io import load_records, write_record
from dlbench.run import monitor

from ...conftest import ROOT
from ..run.test_monitor import spec
from .test_gpu import FakeNVML

NODE = ["GPU-fake-0", "GPU-fake-1"]
# One job: hold one GPU of the fake node for 0.3 s, print what it held and when.
JOB = """
import json, sys, time
from pathlib import Path
from dlbench.hardware import slots
with slots.hold("gpu", {node!r}, 1, Path(sys.argv[1]), wait_s=60, log=lambda line: None) as held:
    start = time.time()
    {body}
    print(json.dumps({{"gpus": held.devices, "start": start, "end": time.time()}}), flush=True)
"""


def _job(lock_dir, body="time.sleep(0.3)", node=NODE):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts")}
    return subprocess.Popen([sys.executable, "-c", JOB.format(node=node, body=body), str(lock_dir)],
                            stdout=subprocess.PIPE, text=True, env=env)


def test_jobs_asking_for_one_gpu_each_never_share_one(tmp_path):
    jobs = [_job(tmp_path) for _ in range(6)]
    held = [json.loads(job.communicate(timeout=60)[0]) for job in jobs]
    assert sorted({gpu for job in held for gpu in job["gpus"]}) == NODE  # both GPUs were used
    for a, b in combinations(held, 2):
        if a["gpus"] == b["gpus"]:
            assert a["end"] <= b["start"] or b["end"] <= a["start"], (a, b)


def test_a_killed_job_releases_its_gpu(tmp_path):
    ready = tmp_path / "ready"
    job = _job(tmp_path / "locks", body=f"Path({str(ready)!r}).touch(); time.sleep(600)", node=NODE[:1])
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = []
    with (pytest.raises(slots.SlotsBusy, match=rf"held: {{'GPU-fake-0': '{job.pid}'}}"),
          slots.hold("gpu", NODE[:1], 1, tmp_path / "locks", wait_s=0.5, log=lines.append)):
        pass
    assert lines == [f"waiting for 1 free gpu(s); held now (device: pid): {{'GPU-fake-0': '{job.pid}'}}"]
    job.send_signal(signal.SIGKILL)
    job.wait()
    with slots.hold("gpu", NODE[:1], 1, tmp_path / "locks", wait_s=0) as held:  # free at once: no wait allowed
        assert held.devices == ["GPU-fake-0"]


def test_a_job_never_holds_part_of_its_gpus_while_it_waits(tmp_path):
    """Two 2-GPU jobs on a 3-GPU node each holding one and waiting for the other would deadlock."""
    node = ["GPU-a", "GPU-b", "GPU-c"]
    with slots.hold("gpu", node[1:2], 1, tmp_path):  # another job has GPU-b
        with slots.hold("gpu", node, 2, tmp_path, wait_s=5) as held:
            assert held.devices == ["GPU-a", "GPU-c"]
        with (pytest.raises(slots.SlotsBusy),
              slots.hold("gpu", node[:2], 2, tmp_path, wait_s=0.3, log=lambda line: None)):
            pass
        with slots.hold("gpu", node[:1], 1, tmp_path, wait_s=0.3) as held:
            assert held.devices == ["GPU-a"]  # the failed attempt let GPU-a go


def test_the_record_names_the_gpus_and_cores_the_run_held(tmp_path, monkeypatch):
    """The runner cannot use the fake GPU, but the monitor gave it GPU-fake-1: GPU-fake-0 is held by another job.
    On a CPU build of torch the run is unavailable, never a CPU run; on a CUDA build torch sees no GPU of that name."""
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    with slots.hold("gpu", NODE[:1], 1, tmp_path / "locks"):
        record = monitor.run(spec(device="gpu1", iterations=3, warmup_iterations=1), sys.executable,
                             tmp_path / "run.log", 120, 20, "sha", nvml=FakeNVML(), lock_dir=tmp_path / "locks")
    write_record(record, tmp_path / "rep1.json")
    record = load_records([tmp_path / "rep1.json"])[0]
    assert record["status"] == "unavailable"
    assert record["reason"].startswith(f"gpu1 needs 1 GPU(s); torch {torch.__version__} sees 0" if torch.version.cuda
                                       else f"pytorch {torch.__version__} in {sys.prefix} is a CPU build; ")
    assert [(g["index"], g["uuid"]) for g in record["provenance"]["gpus"]] == [(1, "GPU-fake-1")]
    assert record["provenance"]["cores_held"] == sorted(os.sched_getaffinity(0))[:2]
    assert "holding GPUs ['GPU-fake-1'], cores" in (tmp_path / "run.log").read_text()


def test_records_prove_that_runs_on_the_same_cores_did_not_overlap(tmp_path):
    """Two runs that want every core: one waits for the other. Each record's held interval (after the wait)
    is disjoint from the other's, and the waiting one's start is before its interval."""
    cores = len(os.sched_getaffinity(0))
    records = {}

    def measure(repetition):
        records[repetition] = monitor.run(spec(threads=cores, iterations=3, warmup_iterations=1, repetition=repetition),
                                          sys.executable, tmp_path / f"run{repetition}.log", 120, 20, "sha",
                                          lock_dir=tmp_path / "locks")

    runs = [threading.Thread(target=measure, args=(repetition,)) for repetition in (1, 2)]
    for run in runs:
        run.start()
    for run in runs:
        run.join()
    times = [{key: datetime.fromisoformat(value) for key, value in record["provenance"].items()
              if key in ("started_at", "held_from", "held_until", "finished_at")} for record in records.values()]
    first, second = sorted(times, key=lambda interval: interval["held_from"])
    assert [record["status"] for record in records.values()] == ["ok", "ok"]
    assert first["held_until"] <= second["held_from"]
    assert second["started_at"] < second["held_from"] - timedelta(seconds=1)  # it waited
    for interval in (first, second):  # started_at and finished_at are to the second
        assert interval["started_at"] <= interval["held_from"] < interval["held_until"]
        assert interval["held_until"] < interval["finished_at"] + timedelta(seconds=1)


def test_a_device_the_node_lacks_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    record = monitor.run(spec(device="gpu4"), sys.executable, tmp_path / "run.log", 120, 20, "sha",
                         nvml=FakeNVML(), lock_dir=tmp_path / "locks")
    assert record["status"] == "unavailable" and record["reason"] == "gpu4 needs 4 GPU(s); this node has 2"
    assert record["memory"]["reasons"]["gpu_device_peak_mib"] == record["reason"]


def test_a_symlinked_lock_file_is_refused_and_its_target_untouched(tmp_path):
    locks, victim = tmp_path / "locks", tmp_path / "victim"
    locks.mkdir(mode=0o700)
    victim.write_text("precious")
    (locks / "core-0.lock").symlink_to(victim)
    with (pytest.raises(slots.SlotError, match=r"core-0.lock: it is a symbolic link \(refused\)"),
          slots.hold("core", ["0"], 1, locks, wait_s=1)):
        pass
    assert victim.read_text() == "precious"


def test_a_hard_linked_lock_file_is_refused_and_the_file_it_shares_untouched(tmp_path):
    locks, victim = tmp_path / "locks", tmp_path / "victim"
    locks.mkdir(mode=0o700)
    victim.write_text("precious")
    victim.chmod(0o644)
    os.link(victim, locks / "core-0.lock")
    with (pytest.raises(slots.SlotError, match=r"core-0.lock has 2 links: another name shares it"),
          slots.hold("core", ["0"], 1, locks, wait_s=1)):
        pass
    assert victim.read_text() == "precious" and stat.S_IMODE(victim.stat().st_mode) == 0o644


def test_a_lock_directory_another_user_could_tamper_with_is_refused(tmp_path):
    others = tmp_path / "others"
    others.mkdir()
    os.chown(others, 4321, 4321)  # the tests run as root (Slurm's daemons need it too)
    with pytest.raises(slots.SlotError, match=r"belongs to uid 4321, not to you"):
        slots.prepare(others)
    everyone = tmp_path / "everyone"
    everyone.mkdir()
    everyone.chmod(0o777)
    with pytest.raises(slots.SlotError, match=r"writable by every user \(mode drwxrwxrwx\)"):
        slots.prepare(everyone)


def test_the_lock_directory_is_private_by_default_and_configurable(tmp_path, monkeypatch):
    monkeypatch.delenv(slots.DIRECTORY_VARIABLE, raising=False)
    assert slots.lock_dir() == Path(f"/tmp/dlbench-slots-{os.geteuid()}")
    monkeypatch.setenv(slots.DIRECTORY_VARIABLE, str(tmp_path / "from-env"))
    assert slots.lock_dir() == tmp_path / "from-env"
    assert slots.lock_dir(str(tmp_path / "from-config")) == tmp_path / "from-config"
    made = slots.prepare(tmp_path / "new" / "locks")
    assert made.is_dir() and stat.S_IMODE(made.stat().st_mode) == 0o700


def test_a_lock_file_is_never_written(tmp_path):
    with slots.hold("core", ["0"], 1, tmp_path / "locks", wait_s=1):
        pass
    assert (tmp_path / "locks" / "core-0.lock").read_bytes() == b""


def test_an_unusable_lock_directory_is_a_failed_record(tmp_path):
    everyone = tmp_path / "everyone"
    everyone.mkdir()
    everyone.chmod(0o777)
    record = monitor.run(spec(), sys.executable, tmp_path / "run.log", 120, 20, "sha", lock_dir=everyone)
    assert record["status"] == "failed"
    assert record["reason"].startswith(f"SlotError: slot lock directory {everyone} is writable by every user")


# Another user's attempt to hold a lock file: prints whether it could open it, then holds it until stdin closes.
OTHER_USER = """
import fcntl, os, sys
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
except PermissionError:
    print("denied", flush=True)
    sys.exit()
fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
print("held", flush=True)
sys.stdin.read()
"""
NOBODY, SHARED_GROUP = 65534, 4242
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")


@pytest.fixture
def shared_dir():
    """A shared lock directory as docs/cluster.md describes it: root's, group-writable (mode 0775), in the session's
    temporary directory (mode 0755), not a test's private one (0700), so that another user can enter it."""
    import shutil
    import tempfile

    directory = Path(tempfile.mkdtemp(prefix="dlbench-shared-slots-"))
    os.chown(directory, 0, SHARED_GROUP)
    directory.chmod(0o775)
    yield directory
    shutil.rmtree(directory)


def _as_other_user(lock: Path, groups: list[int]) -> subprocess.Popen:
    return subprocess.Popen(["/usr/bin/python3", "-c", OTHER_USER, str(lock)], user=NOBODY, group=NOBODY,
                            extra_groups=groups, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


@as_root
def test_only_the_owner_and_the_directorys_group_can_hold_a_shared_lock(shared_dir):
    with slots.hold("core", ["0", "1"], 2, shared_dir, wait_s=1):
        pass
    for lock in shared_dir.iterdir():
        info = lock.stat()
        assert (stat.S_IMODE(info.st_mode), info.st_gid) == (0o660, SHARED_GROUP), lock
    outsider = _as_other_user(shared_dir / "core-0.lock", groups=[])
    assert outsider.communicate(timeout=30)[0].strip() == "denied"
    member = _as_other_user(shared_dir / "core-0.lock", groups=[SHARED_GROUP])
    try:
        assert member.stdout.readline().strip() == "held"
        with pytest.raises(slots.SlotsBusy), slots.hold("core", ["0"], 1, shared_dir, wait_s=0.5,
                                                        log=lambda line: None):
            pass
    finally:
        member.communicate(timeout=30)


def test_a_lock_file_an_older_version_left_open_to_everyone_is_made_private(tmp_path):
    locks = tmp_path / "locks"
    locks.mkdir(mode=0o700)
    (locks / "core-0.lock").touch(mode=0o644)
    with slots.hold("core", ["0"], 1, locks, wait_s=1):
        pass
    assert stat.S_IMODE((locks / "core-0.lock").stat().st_mode) == 0o600


@as_root
def test_another_users_lock_file_open_to_everyone_is_refused(shared_dir):
    lock = shared_dir / "core-0.lock"
    lock.touch(mode=0o644)
    os.chown(lock, NOBODY, NOBODY)
    refused = r"core-0.lock \(uid 65534, mode -rw-r--r--\) can be opened.*by every user"
    with pytest.raises(slots.SlotError, match=refused), slots.hold("core", ["0"], 1, shared_dir, wait_s=1):
        pass


@as_root
def test_a_lock_directory_link_planted_by_another_user_is_not_followed(tmp_path):
    """Another user plants a link where the default directory would be, to a directory of root's (which the
    check of the directory alone accepts): the link's own entry is refused."""
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    planted = tmp_path / f"dlbench-slots-{os.geteuid()}"
    planted.symlink_to(target)
    os.lchown(planted, NOBODY, NOBODY)
    with pytest.raises(slots.SlotError, match=r"is a symbolic link made by uid 65534, not by you"):
        slots.prepare(planted)
    assert not list(target.iterdir())
    own = tmp_path / "own-link"
    own.symlink_to(target)
    assert slots.prepare(own) == target
