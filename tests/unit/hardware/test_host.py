"""The host's counters over a run's timed window: RAPL energy (a fake powercap tree), and the marks a
run gets when its input or its neighbours slowed it: real runs under the monitor."""

import pytest
from dlbench import datasets, formats, metrics
from dlbench.hardware import host
from dlbench.tables.appendix import appendix
from dlbench.tables.runs import runs_table

from ..run.test_monitor import run, spec


def zone(root, name, label, energy_uj, range_uj=1000_000_000):
    path = root / name
    path.mkdir()
    (path / "name").write_text(label + "\n")
    (path / "energy_uj").write_text(f"{energy_uj}\n")
    (path / "max_energy_range_uj").write_text(f"{range_uj}\n")
    return path


def test_rapl_counts_packages_and_dram_across_a_wrap_around(tmp_path):
    package = zone(tmp_path, "intel-rapl:0", "package-0", 999_000_000)
    zone(tmp_path, "intel-rapl:0:0", "core", 5)  # inside the package's count: not added again
    dram = zone(tmp_path, "intel-rapl:0:1", "dram", 1_000_000)
    rapl = host.Rapl(tmp_path)
    assert rapl.error is None and sorted(rapl.zones) == ["intel-rapl:0 package-0", "intel-rapl:0:1 dram"]
    first = host.HostSample(10.0, 0, 0, rapl.read())
    (package / "energy_uj").write_text("9000000\n")  # wrapped: 1,000,000 J range, +10 J
    (dram / "energy_uj").write_text("3000000\n")  # +2 J
    last = host.HostSample(12.0, 0, 0, rapl.read())
    joules, reason = host.cpu_energy([first, last], (10.0, 14.0), rapl)
    assert reason is None and joules == pytest.approx((10.000001 + 2) * 2)  # 2 s of counts, a 4 s window


def test_without_readable_rapl_the_reason_says_why(tmp_path):
    assert host.Rapl(tmp_path).error == f"no RAPL counters on this machine ({tmp_path}/intel-rapl* absent)"
    (zone(tmp_path, "intel-rapl:0", "package-0", 1) / "energy_uj").unlink()
    assert host.Rapl(tmp_path).error.startswith("RAPL counters cannot be read here (")
    assert host.cpu_energy([], (0, 1), host.Rapl(tmp_path))[0] is None


@pytest.fixture(scope="module")
def mnist_lmdb(tmp_path_factory):
    root = tmp_path_factory.mktemp("mnist")
    datasets.generate("mnist", root / "raw", train_images=256, test_images=32, seed=1)
    datasets.unpack("mnist", root / "raw", root / "data")
    formats.convert("lmdb", "mnist", root / "data", root / "lmdb", log=lambda line: None)
    return root / "lmdb"


def test_a_slow_input_pipeline_marks_the_run_input_bound_and_synthetic_data_never(tmp_path, mnist_lmdb, monkeypatch):
    """Each batch of the LMDB reader is made 20 ms slower (a sitecustomize in the runner's interpreter)."""
    slow = tmp_path / "slow"
    slow.mkdir()
    (slow / "sitecustomize.py").write_text(
        "import time\nfrom dlbench.backends import lmdb_records\nread = lmdb_records.LmdbRecords.batch\n"
        "lmdb_records.LmdbRecords.batch = lambda self, *args, **kwargs: "
        "(time.sleep(0.02), read(self, *args, **kwargs))[1]\n")
    monkeypatch.setenv("PYTHONPATH", str(slow))
    (tmp_path / "slowed").mkdir()
    (tmp_path / "synthetic").mkdir()
    slowed = run(tmp_path / "slowed", spec(dataset="mnist-generated", data_dir=str(mnist_lmdb), threads=1))
    synthetic = run(tmp_path / "synthetic", spec(threads=1))
    runs = runs_table([slowed, synthetic]).set_index("data_mode")
    assert slowed["timing"]["input_wait_seconds"] >= 20 * 0.02  # 20 timed steps
    assert runs.loc["generated", "input_wait"] > 0.3 and runs.loc["generated", "input_bound"]
    # A resident batch is never waited for; on a loaded machine a preemption can still land in one of its 20 fetches
    # (1.4 % of a short window was seen beside the other test worker), never near the mark.
    assert runs.loc["synthetic", "input_wait"] < metrics.FLAGS["input_bound"].above / 2
    assert not runs.loc["synthetic", "input_bound"]
    cell = appendix(runs.reset_index()).query("metric == 'train_speed' and dataset == 'mnist-generated'")
    # ", contended 1/1" too where other work shares the cores
    assert "(n=1, no interval) [input-bound 1/1" in cell["cell"].iloc[0]


def test_the_contention_share_is_the_others_busy_time_over_the_held_cores_capacity():
    """Known counters: over a 2 s window the two held cores were busy 2.6 s, 1.4 s of it the run's own: the others
    took 1.2 s of 4 core-seconds. (A real neighbour pinned to a run's core: make bench's benchmarks/contention.py.)"""
    samples = [host.HostSample(9.0, 90.0, 8.0, None), host.HostSample(10.0, 100.0, 10.0, None),
               host.HostSample(11.0, 101.3, 10.7, None), host.HostSample(12.0, 102.6, 11.4, None),
               host.HostSample(12.05, 102.7, 11.45, None)]  # the close mark's sample, inside the slack
    assert host.contention_share(samples[:4], (10.0, 12.0), cores=2) == (pytest.approx(1.2 / 4), None)
    # the close mark's sample closes the window: its span is then 2.05 s
    assert host.contention_share(samples, (10.0, 12.0), cores=2)[0] == pytest.approx((2.7 - 1.45) / (2 * 2.05))
    # the kernel's per-core and per-process counts tick apart: a run that seems to outwork its cores had them alone
    own_more = [host.HostSample(0.0, 0.0, 0.0, None), host.HostSample(1.0, 0.9, 1.0, None)]
    assert host.contention_share(own_more, (0.0, 1.0), cores=1) == (0.0, None)
    assert host.contention_share(samples[1:2], (10.0, 12.0), cores=2) == (
        None, "fewer than 2 host samples inside the timed window")


def test_the_nodes_sockets_are_its_distinct_physical_ids(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("".join(f"processor\t: {k}\nphysical id\t: {k // 20}\n\n" for k in range(40)))
    assert host.sockets(cpuinfo) == 2
    cpuinfo.write_text("processor\t: 0\nmodel name\t: a VM's CPU\n")  # some hypervisors say nothing
    assert host.sockets(cpuinfo) is None and host.sockets(tmp_path / "absent") is None
