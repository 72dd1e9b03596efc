"""A real tiny run under the monitor, and every way a run can fail still writing its record."""
import json
import os
import resource
import subprocess
import sys
import tomllib

import jsonschema
import pytest
from dlbench import networks, paths
from dlbench.hardware import host
from dlbench.hardware.sampler import Sampler
from dlbench.record.io import load_records, write_record
from dlbench.run import monitor
from dlbench.spec import RunSpec
from dlbench.tasks import window_marks

from ...conftest import ROOT
from ..hardware.test_gpu import FakeNVML


def spec(**changes):
    fields = {"framework": "pytorch", "dataset": "mnist-synthetic", "network": "lenet", "device": "cpu",
              "repetition": 1, "batch_size_global": 32, "iterations": 30, "warmup_iterations": 10,
              "learning_rate": 0.01, "threads": 2}
    return RunSpec(**{**fields, **changes})


def run(tmp_path, run_spec, python=sys.executable, **kwargs):
    record = monitor.run(run_spec, python, tmp_path / "run.log", kwargs.pop("timeout_s", 300), 20, "sha", **kwargs)
    write_record(record, tmp_path / "rep1.json")
    return load_records([tmp_path / "rep1.json"])[0]


def test_a_real_run_records_timing_memory_and_provenance(tmp_path, record_schema):
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = run(tmp_path, spec())
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    runner_cpu_s = children.ru_utime + children.ru_stime - children_before.ru_utime - children_before.ru_stime
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "ok" and record["reason"] == ""
    timing = record["timing"]
    assert len(timing["iteration_seconds"]) == 30
    timed = timing["iteration_seconds"][10:]
    assert timing["images_per_second_mean"] == pytest.approx(32 * 20 / sum(timed), rel=1e-3)
    assert timing["step_completion"]  # how the loop knew each step had finished
    assert timing["wall_seconds"] > sum(timing["iteration_seconds"])
    # Where the time before the timed window went: each phase measured, none overlapping another
    setup = [timing[field] for field in ("start_seconds", "import_seconds", "build_seconds")]
    assert all(seconds > 0 for seconds in setup) and timing["setup_seconds"] == pytest.approx(sum(setup))
    assert timing["import_seconds"] > 0.1  # torch's import
    assert timing["first_step_seconds"] == timing["iteration_seconds"][0]
    assert timing["warmup_seconds"] == pytest.approx(sum(timing["iteration_seconds"][:10]))
    assert timing["setup_seconds"] + sum(timing["iteration_seconds"]) < timing["wall_seconds"]
    # The runner's CPU time over the timed window, as it measured it: at most its two cores' worth,
    # and no more than the kernel counted for the whole runner process (start-up included).
    assert 0 < timing["cpu_per_wall"] <= 2 * 1.05
    assert timing["cpu_per_wall"] * timing["timed_seconds"] <= runner_cpu_s
    assert record["memory"]["host_peak_rss_mib"] > 50
    assert record["memory"]["gpu_process_peak_mib"] is None
    assert record["memory"]["reasons"]["gpu_process_peak_mib"] == "CPU run (no GPU used)"
    # a CPU run: the host's counters a few times a second and on the window's marks, not the GPUs' 20
    # (Sampler says why); a busy machine wakes the sampler later, never sooner
    assert record["power"]["samples"] >= 2 and record["power"]["sample_hz"] < 20 / 2
    assert record["quality"]["final_loss"] > 0
    provenance = record["provenance"]
    assert provenance["packages"]["torch"] and provenance["python"] and provenance["cores"] >= 1
    assert provenance["started_at"] <= provenance["finished_at"]
    assert provenance["git_commit"]  # the checkout is a git repository
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert provenance["dlbench_version"] == project["version"]
    assert f"## {project['version']}" in (ROOT / "CHANGELOG.md").read_text()
    log = (tmp_path / "run.log").read_text()
    assert "iteration 30/30 (timed)" in log


def test_a_real_inference_run_records_throughput_and_single_image_latency(tmp_path, record_schema):
    record = run(tmp_path, spec(task="inference", batch_size_global=8, iterations=12, warmup_iterations=2,
                                latency_calls=40))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "ok", record["reason"]
    assert record["run"]["task"] == "inference" and record["run"]["latency_calls"] == 40
    latency = record["latency"]
    assert len(latency["call_ms"]) == 40 and latency["warmup_calls"] == 10
    assert latency["p50_ms"] <= latency["p90_ms"] <= latency["p99_ms"] <= max(latency["call_ms"])
    assert latency["idiom"] == "model.eval() called under torch.inference_mode()"
    timing = record["timing"]
    assert timing["images_per_second_mean"] == pytest.approx(8 * 10 / sum(timing["iteration_seconds"][2:]), rel=1e-3)
    # (not that a single image takes less than LeNet's batch of 8: a timing that another process on the
    # cores turned round; the workflow test holds LeNet's to a batch of 32's, a margin of many times)
    assert timing["input_wait_share"] is None
    assert timing["reasons"]["input_wait_share"] == "inference runs on a resident batch: it never waits for input"
    assert record["compute"]["flops_per_image"] == networks.inference_flops(networks.network("lenet", "mnist"))
    assert record["quality"]["reasons"]["final_loss"] == "an inference run computes no loss"
    assert "latency call 40/40" in (tmp_path / "run.log").read_text()


def test_inference_over_several_devices_is_unavailable(tmp_path, record_schema):
    record = run(tmp_path, spec(task="inference", device="2xcpu"))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "unavailable"
    assert record["reason"].startswith("inference on 2xcpu: inference runs on one device (cpu, gpu1)")


def test_one_thread_uses_one_core(tmp_path):
    record = run(tmp_path, spec(threads=1, network="lenet", batch_size_global=64))
    assert record["timing"]["cpu_per_wall"] < 1.2


def test_an_exception_in_training_is_a_failed_record_with_the_log_tail(tmp_path, record_schema):
    record = run(tmp_path, spec(dataset="mnist-generated", data_dir=str(tmp_path / "missing")))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "failed"
    assert record["reason"].startswith("FileNotFoundError:") and "missing: no training shards" in record["reason"]
    assert "last lines of the log" in record["reason"] and "in __init__" in record["reason"]
    assert record["timing"]["images_per_second_mean"] is None
    assert record["timing"]["reasons"]["images_per_second_mean"] == "see the run's reason (failed)"


def test_a_framework_this_machine_cannot_run_is_unavailable(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no python3.6, which CNTK needs, on PATH
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))  # nor in pyenv
    record = run(tmp_path, spec(framework="cntk"))
    assert record["status"] == "unavailable"
    assert record["reason"].startswith("CNTK 2.7 requires CPython 3.6")


def test_a_gpu_run_without_a_gpu_is_unavailable(tmp_path, record_schema):
    """On a node whose NVML has no driver loaded, whatever this node has."""
    record = run(tmp_path, spec(device="gpu1"), nvml=FakeNVML(fail_init=True))
    jsonschema.validate({k: v for k, v in record.items() if k != "path"}, record_schema)
    assert record["status"] == "unavailable"
    assert record["reason"] == "gpu1 needs 1 GPU(s); this node has 0 (NVML: Driver Not Loaded)"
    assert record["memory"]["reasons"]["gpu_device_peak_mib"] == record["reason"]


@pytest.mark.parametrize("changes,reason", [
    ({"precision": "tf32"}, "tf32 on cpu: TF32 is a GPU math mode"),
    ({"precision": "fp16"}, "fp16 on cpu: pytorch has fp32, bf16 wired on CPUs"),
    ({"framework": "mxnet", "compile": True},
     "compile: mxnet always compiles (Gluon hybridize (static graph)): its runs without compile are compiled"),
])
def test_numerics_a_framework_lacks_are_unavailable_before_it_is_loaded(tmp_path, record_schema, changes, reason):
    record = run(tmp_path, spec(**changes))
    assert (record["status"], record["reason"]) == ("unavailable", reason)
    assert record["execution"]["precision"] == record["run"]["precision"] == changes.get("precision", "fp32")
    assert record["execution"]["data_parallel"] is None  # one device
    record.pop("path")
    jsonschema.validate(record, record_schema)


def test_the_runner_has_tf32_off_unless_asked_and_jax_allocating_as_it_goes(monkeypatch):
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    for precision in ("fp32", "bf16", "fp16"):
        environment = monitor.runner_environment(2, [], precision=precision)
        assert environment["NVIDIA_TF32_OVERRIDE"] == "0" and environment["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "NVIDIA_TF32_OVERRIDE" not in monitor.runner_environment(2, ["GPU-1"], precision="tf32")


def test_an_environment_that_could_not_be_built_is_unavailable(tmp_path, record_schema):
    reason = "environment from envs/x.txt could not be built"
    record = run(tmp_path, spec(), cannot_run={"status": "unavailable", "reason": reason})
    assert record["status"] == "unavailable" and record["reason"] == reason
    record.pop("path")
    jsonschema.validate(record, record_schema)
    with pytest.raises(jsonschema.ValidationError, match="should not be valid"):  # a status is not a reason's word
        jsonschema.validate({**record, "reason": f"unavailable: {reason}"}, record_schema)
    assert record["timing"]["reasons"]["images_per_second_mean"] == "see the run's reason (unavailable)"


def test_an_interpreter_that_cannot_start_is_a_failed_record(tmp_path):
    record = run(tmp_path, spec(), python=str(tmp_path / "no-such-python"))
    assert record["status"] == "failed" and record["reason"].startswith("cannot start the runner")


def stand_in(tmp_path, script: str) -> str:
    """A runner's interpreter that runs ``script`` (sh) instead: its arguments are the runner's."""
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\n" + script)
    python.chmod(0o755)
    return str(python)


def test_a_runner_killed_by_a_signal_is_a_failed_record_that_names_the_signal(tmp_path):
    record = run(tmp_path, spec(), python=stand_in(tmp_path, "echo 'Killed (out of memory)'\nkill -9 $$\n"))
    assert record["status"] == "failed"
    assert record["reason"].startswith("runner was killed by SIGKILL (signal 9): likely the kernel's OOM killer")
    assert "Killed (out of memory)" in record["reason"]
    bus = run(tmp_path, spec(), python=stand_in(tmp_path, "kill -BUS $$\n"))
    assert bus["reason"].startswith("runner was killed by SIGBUS (signal 7): likely a memory-mapped file shorter "
                                    "than its contents say: a damaged or truncated data file")


def test_an_oom_kill_is_told_by_the_memory_cgroups_counter(tmp_path, monkeypatch):
    """cgroup v1 (memory.oom_control) and v2 (memory.events), as the kernel writes them."""
    cgroups = tmp_path / "cgroup"
    cgroups.write_text("4:memory:/job/7\n0::/job/7\n")
    v1 = tmp_path / "v1" / "memory" / "job" / "7"
    v1.mkdir(parents=True)
    (v1 / "memory.oom_control").write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert host.oom_kills(cgroups, tmp_path / "v1") == 2
    v2 = tmp_path / "v2" / "job" / "7"
    v2.mkdir(parents=True)
    (v2 / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    assert host.oom_kills(cgroups, tmp_path / "v2") == 1
    assert host.oom_kills(cgroups, tmp_path / "none") is None
    monkeypatch.setattr(host, "oom_kills", lambda: 3)
    assert monitor.exit_words(-9, 2) == ("was killed by SIGKILL (signal 9): the kernel's OOM killer ended "
                                         "1 process(es) of this job's memory cgroup during the run (out of memory)")
    assert monitor.exit_words(-9, 3).endswith("; the memory cgroup counted no OOM kill during the run")
    assert monitor.exit_words(255) == "exited with code 255"


def test_a_result_cut_short_is_a_failed_record_saying_so(tmp_path):
    """A result file whose writer was killed mid-write (the runner writes whole ones: a stand-in cuts it)."""
    record = run(tmp_path, spec(), python=stand_in(tmp_path, 'printf \'{"status": "ok", "iteration_se\' > "$4"\n'))
    assert record["status"] == "failed"
    assert record["reason"].startswith("result unreadable: ") and "result.json: JSONDecodeError" in record["reason"]
    assert "disk full, or a kill mid-write?" in record["reason"]


def test_a_full_disk_is_a_failed_record_saying_so(tmp_path, tiny_disk):
    """The real runner on a disk filled as it starts: no result can be written, and the record says why."""
    python = stand_in(tmp_path,
                      f'head -c 4M /dev/zero > "{tiny_disk}/filler" 2>/dev/null\nexec {sys.executable} "$@"\n')
    record = monitor.run(spec(iterations=12, warmup_iterations=2), python, tiny_disk / "run.log", 300, 20, "sha")
    assert record["status"] == "failed"
    assert record["reason"].startswith("runner exited with code "), record["reason"]
    assert f"with no result; disk full (0.0 MiB free on the file system of {tiny_disk}/.dlbench-" in record["reason"]
    assert not list(tiny_disk.glob(".dlbench-*"))  # the scratch directory is gone


def test_a_run_past_its_timeout_is_killed_and_failed(tmp_path):
    record = run(tmp_path, spec(iterations=100000, warmup_iterations=10), timeout_s=3)
    assert record["status"] == "failed" and record["reason"].startswith("timeout: no result after 3 s")
    assert record["timing"]["wall_seconds"] < 30


def test_records_are_written_whole(tmp_path):
    write_record({"schema": 1}, tmp_path / "a" / "rep1.json")
    assert json.loads((tmp_path / "a" / "rep1.json").read_text()) == {"schema": 1}
    assert not list((tmp_path / "a").glob("*.part"))


def test_a_run_on_a_truncated_shard_fails_naming_it_before_it_starts(tmp_path):
    """A half-copied LMDB (which its reader would die of by SIGBUS) is the run's failure, with the shard and
    how to convert it again; the runner is never started."""
    from dlbench import datasets, formats

    datasets.generate("mnist", tmp_path / "raw", train_images=64, test_images=16, seed=1)
    datasets.unpack("mnist", tmp_path / "raw", tmp_path / "data")
    converted = tmp_path / "lmdb"
    formats.convert("lmdb", "mnist", tmp_path / "data", converted, log=lambda line: None)
    data = converted / "train-00000-of-00001" / "data.mdb"
    with open(data, "r+b") as file:
        file.truncate(data.stat().st_size // 2)
    record = run(tmp_path, spec(dataset="mnist-generated", data_dir=str(converted)))
    assert record["status"] == "failed"
    assert record["reason"].startswith(f"DamagedShard: {data} has ")
    assert f"snakemake --force {converted}" in record["reason"]
    assert "iteration" not in (tmp_path / "run.log").read_text()


def test_a_reader_s_error_on_a_byte_changed_in_place_names_the_shard_and_how_to_convert_it_again(
        tmp_path, tensorflow_python):
    """A byte flipped inside a TFRecord shard, its date set back: its size and date match what the conversion wrote,
    TensorFlow's reader fails (DataLossError: corrupted record at ..., no file named), and the failure names the
    shard, found by every file's checksum, and the command that converts it again."""
    from dlbench import datasets, formats

    datasets.generate("mnist", tmp_path / "raw", train_images=64, test_images=16, seed=1)
    datasets.unpack("mnist", tmp_path / "raw", tmp_path / "data")
    converted = tmp_path / "tfrecord"
    formats.convert("tfrecord", "mnist", tmp_path / "data", converted, log=lambda line: None)
    shard = next(path for path in (converted / "train-00000-of-00001").iterdir() if path.suffix == ".tfrecord")
    dated = shard.stat()
    with open(shard, "r+b") as file:
        file.seek(dated.st_size // 2)
        flipped = bytes([file.read(1)[0] ^ 0xFF])
        file.seek(dated.st_size // 2)
        file.write(flipped)
    os.utime(shard, ns=(dated.st_atime_ns, dated.st_mtime_ns))
    record = run(tmp_path, spec(framework="tensorflow", dataset="mnist-generated", data_dir=str(converted)),
                 python=tensorflow_python)
    assert record["status"] == "failed" and "DataLossError" in record["reason"], record["reason"]
    assert f"{shard} is not what its conversion wrote (its SHA-256 differs; its size and date match)" in \
        record["reason"]
    assert f"convert it again: snakemake --force {converted}" in record["reason"]


def test_waiting_for_the_runner_wakes_the_monitor_only_when_it_ends():
    """Popen.wait(timeout) looks every 50 ms, taking a core from a run that trains on all of them; the monitor's
    wait is woken by the child's end (or its timeout), a handful of context switches over a second's run."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1)"])
    before = resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw
    assert monitor.wait_for_exit(child, 30) == 0
    assert resource.getrusage(resource.RUSAGE_THREAD).ru_nvcsw - before <= 5
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            monitor.wait_for_exit(sleeper, 0.2)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_host_peak_rss_counts_a_spike_between_two_samples():
    """A CPU run's host is sampled a few times a second; the runner's resident peak is the kernel's own, so a
    400 MiB allocation held for 20 ms between two samples is still its peak."""
    child = subprocess.Popen([sys.executable, "-c", ("import time; time.sleep(0.6); b = b'1' * (400 * 2**20); "
                              "time.sleep(0.02); del b; time.sleep(0.6)")])
    sampler = Sampler(child.pid, monitor.GpuProbe([]), 20, [0], host.Rapl())
    sampler.start()
    child.wait()
    sampler.stop()
    assert sampler.interval == 1 / Sampler.HOST_HZ  # no GPU: the host's rate, not the GPUs'
    assert sampler.rss_peak_mib >= 400


def _marking_child(listener, before_s: float, window_s: float, after_s: float) -> subprocess.Popen:
    """A process that marks a timed window as a runner does, and prints the window's clock readings."""
    code = ("import time\nfrom dlbench.tasks import window_marks as m\n"
            f"time.sleep({before_s}); start = time.time(); m.mark(m.OPEN)\n"
            f"time.sleep({window_s}); end = time.time(); m.mark(m.CLOSE)\n"
            f"time.sleep({after_s}); print(start, end)\n")
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            env=paths.with_package({**os.environ, **listener.environment}))


def _sampled(tmp_path, hz: float, before_s: float, window_s: float, after_s: float):
    listener = window_marks.Listener(tmp_path / "marks")
    child = _marking_child(listener, before_s, window_s, after_s)
    sampler = Sampler(child.pid, monitor.GpuProbe([]), hz, [0], host.Rapl(), listener)
    sampler.start()
    start, end = map(float, child.communicate()[0].split())
    sampler.stop()
    listener.close()
    return sampler, [sample.time for sample in sampler.host_samples], (start, end)


def test_the_monitor_samples_the_host_on_the_window_s_marks(tmp_path):
    """Its clock far slower than the window (one sample in 5 s): the samples are the first and the two marks'."""
    sampler, times, (start, end) = _sampled(tmp_path, 0.2, 0.3, 0.6, 0.3)
    assert sampler.ticks == 3
    assert start <= times[1] < end <= times[2]
    # the window's samples are its bounds: the open mark's inside it, the close mark's just after its end (on a
    # loaded machine its wake-up can be later than the slack: then the window's last sample is the open mark's)
    assert host.within(sampler.host_samples, (start, end))[0].time == times[1]
    assert host.within([*sampler.host_samples[:2], host.HostSample(end + 0.01, 0, 0, None)], (start, end))[-1].time \
        == end + 0.01
    assert len(host.within([*sampler.host_samples[:2], host.HostSample(end + 0.3, 0, 0, None)], (start, end))) == 1


def test_a_cpu_run_s_monitor_wakes_seldom_inside_its_window(tmp_path):
    """Four samples a second outside the window, one inside (each wake-up takes a core from the run)."""
    sampler, times, (start, end) = _sampled(tmp_path, 20, 1.5, 2.5, 0.3)
    before = [time for time in times if time < start]
    inside = [time for time in times if start < time < end]
    assert before  # the first sample's, and more at 4 Hz (fewer when the machine is loaded)
    assert len(inside) <= 1 + 3  # the open mark's and one a second (a busy machine wakes it later, never sooner)
    assert sampler.interval == 1 / Sampler.HOST_HZ and sampler.window_interval == 1.0


def test_marks_without_a_monitor_do_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(window_marks.VARIABLE, raising=False)
    window_marks.mark(window_marks.OPEN)
    monkeypatch.setenv(window_marks.VARIABLE, str(tmp_path / "absent"))
    window_marks.mark(window_marks.OPEN)
    (tmp_path / "plain").write_text("a user's")
    monkeypatch.setenv(window_marks.VARIABLE, str(tmp_path / "plain"))  # not a FIFO: never written to
    window_marks.mark(window_marks.CLOSE)
    assert (tmp_path / "plain").read_text() == "a user's"
