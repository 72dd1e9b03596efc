"""A two-node Slurm cluster on this machine (TwoNodeSlurm: each slurmd in a network namespace of its own): its
nodes are hosts of their own to Slurm and to the jobs, it leaves nothing behind, and a data-parallel run spans
both."""
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import yaml
from dlbench.record.io import load_records
from dlbench.spec import RunSpec

from ..conftest import ROOT, processes_of_this_test
from .slurm_cluster import SLURM_CONF, TwoNodeSlurm
from .test_slurm import through_slurm

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and Slurm's daemons need root")


def _namespaces() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout.split())


def _ours() -> set[str]:
    return {TwoNodeSlurm.namespace(host) for host in TwoNodeSlurm.ADDRESSES}


def test_two_nodes_run_a_job_s_tasks_as_two_hosts_and_leave_nothing_behind():
    before = _namespaces()
    subprocess.run(["ip", "netns", "add", TwoNodeSlurm.namespace("dlnode2")], check=True)  # one a killed test left
    cluster = TwoNodeSlurm()
    try:
        cluster.start()
        partitions = subprocess.run(cluster.client(["sinfo", "--noheader", "--Node", "--format=%P %N %f"]),
                                    capture_output=True, text=True, check=True).stdout.split("\n")
        assert sorted(filter(None, partitions)) == ["both* dlnode1 first", "both* dlnode2 second",
                                                    "first dlnode1 first", "second dlnode2 second"]
        # one task per node: each on its host, each resolving the other by name and reaching it over the bridge
        tasks = subprocess.run(cluster.client(
            ["srun", "--nodes=2", "--ntasks-per-node=1", "--label", "python3", "-c",
             ("import os, socket; print(socket.gethostname(), os.environ['SLURMD_NODENAME'], "
              "socket.gethostbyname('dlnode1'), socket.gethostbyname('dlnode2'))")]),
            capture_output=True, text=True, check=True, timeout=60).stdout
        assert sorted(tasks.splitlines()) == ["0: dlnode1 dlnode1 10.231.0.11 10.231.0.12",
                                              "1: dlnode2 dlnode2 10.231.0.11 10.231.0.12"]
        outside = subprocess.run(cluster.as_host("dlnode1", ["python3", "-c", (
            "import socket\ntry: socket.create_connection(('1.1.1.1', 53), timeout=2)\n"
            "except OSError as error: print(error.errno)")]), capture_output=True, text=True, check=True).stdout
        assert outside.strip() == "101"  # ENETUNREACH: the nodes have no route out
    finally:
        cluster.stop()
    assert _namespaces() == before - _ours()
    assert not SLURM_CONF.exists() or "dlbench" not in SLURM_CONF.read_text()
    assert not processes_of_this_test("slurmctld -D", "slurmd -D")  # the cluster's daemons; another Slurm may run
    assert not Path(f"/run/netns/{TwoNodeSlurm.namespace('dlctl')}").exists() and not cluster.spool.exists()


def _over_two_nodes(tmp_path, spec: RunSpec, *pythons: str, tasks_per_node: int = 1) -> tuple[dict, str]:
    """The run in an allocation of the two nodes, its monitor on the controller's host: its record and log."""
    spec.dump(tmp_path / "spec.json")
    cluster = TwoNodeSlurm()
    try:
        cluster.start()
        monitored = [str(ROOT / "tests" / "workflow" / "monitored_run.py"), str(tmp_path / "spec.json"), str(tmp_path)]
        allocation = subprocess.run(cluster.client(
            ["salloc", "--nodes=2", f"--ntasks-per-node={tasks_per_node}", sys.executable, *monitored, *pythons]),
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts")})
    finally:
        cluster.stop()
    assert allocation.returncode == 0, allocation.stderr[-3000:]
    (record,) = load_records([tmp_path / "rep1.json"])
    log = (tmp_path / "run.log").read_text()
    assert record["status"] == "ok", f"{record['reason']}\n{log[-3000:]}"
    assert len(record["timing"]["iteration_seconds"]) == spec.iterations
    return record, log


def test_pytorch_trains_over_two_nodes_one_process_each_meeting_at_the_first(tmp_path):
    """``2xcpu`` in an allocation of the two nodes: the monitor starts one process per node with srun,
    torchrun's c10d rendezvous at the first node, DDP over gloo across the bridge; the record names both hosts,
    and the run checks that both ranks ended with the same weights."""
    record, log = _over_two_nodes(tmp_path, RunSpec("pytorch", "mnist-synthetic", "lenet", "2xcpu", 1, 32, 12, 2,
                                                    0.01, 2))
    assert "srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=1" in log
    assert "--rdzv-endpoint=dlnode1:29500" in log
    assert record["execution"]["data_parallel"] == ("DistributedDataParallel over 2 processes on dlnode1, dlnode2: "
                                                    "gradients all-reduced by gloo")
    # the nodes share this machine's kernel: said so; the monitor's samples hold none of the ranks: nothing from them
    assert record["execution"]["nodes"] == ["dlnode1", "dlnode2"] and record["execution"]["nodes_share_machine"]
    assert "nodes: dlnode1, dlnode2 (one machine: they share its cores)" in log
    unsampled = record["memory"]["reasons"]["host_peak_rss_mib"]
    assert record["memory"]["host_peak_rss_mib"] is None and unsampled.startswith(
        "its 2 processes ran on the allocation's nodes, started by srun: the monitor on ")
    assert record["timing"]["contention_share"] is None and record["timing"]["reasons"]["contention_share"] == unsampled


def test_mxnet_trains_over_two_nodes_of_two_processes_each(tmp_path, mxnet_python):
    """``2x2xcpu``: srun starts two tasks per node, each a worker with its server; four workers train as one."""
    record, log = _over_two_nodes(tmp_path, RunSpec("mxnet", "mnist-synthetic", "lenet", "2x2xcpu", 1, 32, 8, 2, 0.01,
                                                    2), mxnet_python, tasks_per_node=2)
    assert "runner: srun --nodes=2 --ntasks=4 --ntasks-per-node=2 --kill-on-bad-exit=1 " in log
    assert "-m dlbench.run.ps_lite node 4 " in log and "batch 8" in log
    hosts = record["execution"]["data_parallel"].split(": ")[0].split(" on ")[1].split(", ")
    assert sorted(hosts) == ["dlnode1", "dlnode1", "dlnode2", "dlnode2"]
    assert record["execution"]["nodes"] == ["dlnode1", "dlnode2"]


def test_tensorflow_trains_over_two_nodes_each_worker_finding_the_others_from_slurm(tmp_path, tensorflow_python):
    """``2xcpu`` of TensorFlow: srun starts a worker per node; MultiWorkerMirroredStrategy with
    SlurmClusterResolver, its collectives between the nodes; both workers end with the same weights."""
    record, log = _over_two_nodes(tmp_path, RunSpec("tensorflow", "mnist-synthetic", "lenet", "2xcpu", 1, 32, 12, 2,
                                                    0.01, 2), tensorflow_python)
    assert "runner: srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=1 " in log
    assert record["execution"]["data_parallel"] == (
        "tf.distribute.MultiWorkerMirroredStrategy over 2 processes on dlnode1:29510, dlnode2:29510: gradients "
        "all-reduced by its collectives")


def test_mxnet_trains_over_two_nodes_with_a_parameter_server_on_each(tmp_path, mxnet_python):
    """``2xcpu`` of MXNet: srun starts dlbench.run.ps_lite on each node, which starts that node's server (and on the
    first, the scheduler) and its worker; kvstore dist_sync across the bridge; each worker ends with the servers'
    weights, and the record names both hosts."""
    record, log = _over_two_nodes(tmp_path, RunSpec("mxnet", "mnist-synthetic", "lenet", "2xcpu", 1, 32, 12, 2, 0.01,
                                                    2), mxnet_python)
    assert "runner: srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --kill-on-bad-exit=1 " in log
    assert "-m dlbench.run.ps_lite node 2 " in log
    assert record["execution"]["data_parallel"].startswith("kvstore dist_sync over 2 processes on dlnode")
    assert sorted(record["execution"]["data_parallel"].split(": ")[0].split(" on ")[1].split(", ")) == [
        "dlnode1", "dlnode2"]


def test_cntk_trains_over_two_nodes_one_mpi_rank_on_each(tmp_path, cntk_worker_python):
    """``2xcpu`` of CNTK: its runner starts mpiexec, which starts OpenMPI's daemons on the allocation's nodes with
    srun, a rank on each; the ranks connect back to the runner over TCP and all-reduce through MPI across the
    bridge; the run checks that both end with the same weights."""
    record, log = _over_two_nodes(tmp_path, RunSpec("cntk", "mnist-synthetic", "lenet", "2xcpu", 1, 32, 12, 2, 0.01, 2),
                                  sys.executable, cntk_worker_python)
    assert "--map-by ppr:1:node" in log and " tcp:10.231.0." in log
    assert record["execution"]["data_parallel"] == ("data_parallel_distributed_learner over 2 MPI ranks on dlnode1, "
                                                    "dlnode2: gradients all-reduced by CNTK's MPI communicator")


def test_scancel_mid_run_leaves_no_process_of_the_run_on_either_node(tmp_path):
    """A two-node PyTorch run as a batch job (its monitor on the first node), cancelled while both ranks train:
    Slurm ends the job's steps on both nodes, and nothing of the run is left running."""
    RunSpec("pytorch", "mnist-synthetic", "lenet", "2xcpu", 1, 32, 100_000, 2, 0.01, 2).dump(tmp_path / "spec.json")
    monitored = [str(ROOT / "tests" / "workflow" / "monitored_run.py"), str(tmp_path / "spec.json"), str(tmp_path)]
    cluster = TwoNodeSlurm()
    try:
        cluster.start()
        job = subprocess.run(cluster.client(
            ["sbatch", "--parsable", "--nodes=2", "--ntasks-per-node=1", f"--output={tmp_path / 'job.out'}",
             "--wrap", " ".join([sys.executable, *monitored])]), capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "workflow" / "scripts")}).stdout.strip()
        log = tmp_path / "run.log"
        deadline = time.monotonic() + 120
        while not all(f"rank {rank} of 2" in (log.read_text() if log.exists() else "") for rank in (0, 1)):
            assert time.monotonic() < deadline, (tmp_path / "job.out").read_text()[-3000:]
            time.sleep(0.5)
        time.sleep(2)  # both ranks in their training loop
        running = _run_processes()
        assert len(running) >= 2, running  # a rank on each node (and torchrun's agents)
        subprocess.run(cluster.client(["scancel", job]), check=True)
        while subprocess.run(cluster.client(["squeue", "--noheader", "--jobs", job]), capture_output=True, text=True,
                             check=False).stdout.strip():
            assert time.monotonic() < deadline + 60, "the cancelled job stayed in the queue"
            time.sleep(0.5)
        left = _run_processes()
        for _ in range(40):  # SIGTERM, then SIGKILL after the cluster's KillWait (5 s)
            if not left:
                break
            time.sleep(0.5)
            left = _run_processes()
        assert not left, left
    finally:
        cluster.stop()


def _run_processes() -> list[psutil.Process]:
    return processes_of_this_test("dlbench.run.runner", "monitored_run.py", "torch.distributed.run")


@pytest.mark.slow  # the workflow end to end through Slurm (minutes)
def test_each_hardware_target_s_runs_are_slurm_jobs_on_its_own_node(tmp_path):
    """.test/config-hardware with its targets on the two nodes' partitions (first, second) and a third over both
    (partition both, 2xcpu): the workflow, run with --profile profiles/slurm on the controller's host, places each
    target's runs on its node, and the third's in an allocation of both nodes, a process on each."""
    config = yaml.safe_load((ROOT / ".test" / "config-hardware" / "config.yaml").read_text())
    config.update(environment="current", repetitions=1)  # where runs go, not how they aggregate (test_slurm.py)
    for target, node in zip(config["hardware"], TwoNodeSlurm.NODES, strict=True):
        feature = TwoNodeSlurm.FEATURES[node]
        target["slurm"] = {"partition": feature, "constraint": feature}
    config["devices"].append("2xcpu")
    config["hardware"].append({"name": "pair", "devices": ["2xcpu"], "datasets": ["mnist"],
                               "slurm": {"partition": "both", "constraint": "first|second"}})
    cluster = TwoNodeSlurm()
    try:
        cluster.start()
        records = through_slurm(config, tmp_path, cluster.client)
    finally:
        cluster.stop()
    nodes = {target["name"]: node for target, node in zip(config["hardware"], TwoNodeSlurm.NODES, strict=False)}
    assert records and all(record["status"] == "ok" for record in records), [r["reason"] for r in records]
    one_node = [record for record in records if record["run"]["hardware"] != "pair"]
    assert {(record["run"]["hardware"], record["provenance"]["slurm_node"]) for record in one_node} == set(
        nodes.items())
    pair = [record for record in records if record["run"]["hardware"] == "pair"]
    assert len(pair) == 1 and all(record["execution"]["nodes"] == ["dlnode1", "dlnode2"] for record in pair)
    assert all("on dlnode1, dlnode2" in record["execution"]["data_parallel"] for record in pair)
    appendix = (tmp_path / "results" / "tables" / "appendix.md").read_text()  # made where Snakemake runs
    assert "nodes on one machine 1/1" in appendix
