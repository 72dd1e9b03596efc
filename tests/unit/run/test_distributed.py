"""Data parallelism over processes (<n>x<device>): PyTorch over two real processes on this machine
(torchrun, gloo), the Slurm launch command, and what the other frameworks and a bad batch say."""
import socket
import sys

import pytest
from dlbench.config import ConfigError, cases
from dlbench.hardware import cluster
from dlbench.run import launch
from dlbench.spec import device_layout, parse_device

from ...conftest import processes_of_this_test
from ..test_config import GOOD, validated
from .test_monitor import run, spec


def test_pytorch_trains_over_two_processes_with_gloo(tmp_path):
    record = run(tmp_path, spec(device="2xcpu", batch_size_global=32, iterations=20, warmup_iterations=5))
    assert record["status"] == "ok", record["reason"]
    log = (tmp_path / "run.log").read_text()
    assert "torch.distributed.run --standalone --nproc-per-node=2" in log
    for rank in (0, 1):  # each trains on half of the global batch, gradients all-reduced
        assert f"rank {rank} of 2: cpu, batch 16, gloo" in log
    assert log.count("iteration 20/20 (timed)") == 1  # rank 0 alone reports and writes the result
    assert len(record["timing"]["iteration_seconds"]) == 20 and record["timing"]["images_per_second_mean"] > 0
    host = socket.gethostname()
    assert record["execution"]["data_parallel"] == (f"DistributedDataParallel over 2 processes on {host}, {host}: "
                                                    "gradients all-reduced by gloo")



def test_mxnet_trains_over_two_processes_with_its_parameter_servers(tmp_path, mxnet_python):
    """``2xcpu`` of MXNet on one machine: a scheduler, two servers and two workers (kvstore dist_sync) on the
    loopback; each worker checks that it ends with the servers' weights, and nothing of the group outlives it."""
    record = run(tmp_path, spec(framework="mxnet", device="2xcpu", batch_size_global=32, iterations=12,
                                warmup_iterations=2), python=mxnet_python)
    log = (tmp_path / "run.log").read_text()
    assert record["status"] == "ok", f"{record['reason']}\n{log[-3000:]}"
    assert "-m dlbench.run.ps_lite local 2" in log
    host = socket.gethostname()
    for rank in (0, 1):  # each trains on half of the global batch
        assert f"worker {rank} of 2: batch 16, {host}, {host}" in log, log[-3000:]
    assert record["execution"]["data_parallel"] == (f"kvstore dist_sync over 2 processes on {host}, {host}: gradients "
                                                    "pushed to 2 parameter servers, which sum them and apply the "
                                                    "optimizer")
    assert log.count("iteration 12/12 (timed)") == 1 and record["timing"]["images_per_second_mean"] > 0
    assert not processes_of_this_test("import mxnet", "dlbench.run.ps_lite")


def test_a_group_whose_other_process_fails_fails_though_the_first_wrote_its_result(tmp_path):
    """The launcher's exit code speaks for the whole group: an ``ok`` result from the first process does not
    stand when another failed (here a stand-in launcher writes one and exits 3)."""
    launcher = tmp_path / "python"
    launcher.write_text('#!/bin/sh\nfor last; do :; done\necho \'{"status": "ok", "reason": ""}\' > "$last"\n'
                        'echo "rank 1: RuntimeError: other weights"\nexit 3\n')
    launcher.chmod(0o755)
    record = run(tmp_path, spec(device="2xcpu"), python=str(launcher))
    assert record["status"] == "failed"
    assert record["reason"].startswith("a process of the group of 2 exited with code 3 after the first wrote its "
                                       "result (the log says why)")
    assert "rank 1: RuntimeError: other weights" in record["reason"]  # the log's last lines


def test_in_a_slurm_allocation_each_node_starts_one_process_that_meets_at_the_first():
    env = {"SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": "41", "SLURM_JOB_NODELIST": "node7,node8"}
    command = launch.runner_command("python", "pytorch", "2xcpu", ["spec.json", "result.json"], env)
    assert command == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "python",
                       "-m", "torch.distributed.run", "--nnodes=2", "--nproc-per-node=1", "--rdzv-backend=c10d",
                       "--rdzv-id=41", "--rdzv-endpoint=node7:29500", "-m", "dlbench.run.runner", "spec.json",
                       "result.json"]
    assert cluster.local_processes("2xcpu", env) == 1 and cluster.local_processes("2xcpu", {}) == 2
    # TensorFlow's workers are srun's tasks themselves, one per node
    assert launch.runner_command("python", "tensorflow", "2xcpu", ["spec.json", "result.json"], env) == [
        "srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1", "python", "-m",
        "dlbench.run.runner", "spec.json", "result.json"]
    # MXNet's ps-lite roles (scheduler, server, worker) are started by dlbench.run.ps_lite on each node
    assert launch.runner_command("python", "mxnet", "2xcpu", ["spec.json", "result.json"], env)[4:] == [
        "--kill-on-bad-exit=1", "python", "-m", "dlbench.run.ps_lite", "node", "2", "spec.json", "result.json"]


def test_nodes_processes_per_node_and_gpus_per_process_are_each_spelled():
    """``2x2xgpu1``: two nodes of two processes, a GPU each; inside an allocation of two nodes each node runs two
    (one torchrun per node with two processes; two srun tasks per node), on one machine all four."""
    assert parse_device("2x2xgpu1") == (4, 1) and device_layout("2x2xgpu1") == (2, 2, 1)
    assert device_layout("2xcpu") == (2, 1, 0) and device_layout("gpu2") == (1, 1, 2)
    for bad in ("1xcpu", "1x1xcpu", "2x0xcpu", "2x2x2xcpu"):
        with pytest.raises(ValueError, match="<m>x<k>x<cpu|gpuN>"):
            device_layout(bad)
    env = {"SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_ID": "41", "SLURM_JOB_NODELIST": "node7,node8"}
    assert cluster.local_processes("2x2xgpu1", env) == 2 and cluster.local_processes("2x2xgpu1", {}) == 4
    assert cluster.local_processes("1x2xcpu", env) == 2  # two processes on one node, in an allocation too
    torchrun = launch.runner_command("python", "pytorch", "2x2xgpu1", ["spec.json", "result.json"], env)
    assert torchrun[:5] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--kill-on-bad-exit=1"]
    assert "--nnodes=2" in torchrun and "--nproc-per-node=2" in torchrun
    assert launch.runner_command("python", "tensorflow", "2x2xgpu1", ["s", "r"], env)[:5] == [
        "srun", "--nodes=2", "--ntasks=4", "--ntasks-per-node=2", "--kill-on-bad-exit=1"]
    assert launch.runner_command("python", "pytorch", "2x2xgpu1", ["s", "r"], {})[3:5] == [
        "--standalone", "--nproc-per-node=4"]


def test_a_training_job_over_nodes_asks_slurm_for_them():
    """The executor plugin's resources: nodes and tasks for a run over nodes (an MPI-style job, which the plugin
    does not wrap in an srun of its own); one task, and no tasks per GPU, for every other run."""
    one = {"nodes": 1, "mpi": "", "tasks": 0, "tasks_per_node": 0, "tasks_per_gpu": 0}
    assert launch.slurm_resources("cpu") == one and launch.slurm_resources("gpu2") == one
    assert launch.slurm_resources("1x2xcpu") == one
    assert launch.slurm_resources("2xcpu") == {**one, "nodes": 2, "mpi": "srun", "tasks": 2}
    assert launch.slurm_resources("2x2xgpu1") == {**one, "nodes": 2, "mpi": "srun", "tasks_per_node": 2}


def test_other_frameworks_over_processes_are_unavailable(tmp_path):
    record = run(tmp_path, spec(framework="caffe", device="2xcpu"), python=sys.executable)
    assert record["status"] == "unavailable"
    assert record["reason"] == ("2xcpu: 2 processes: data parallelism over processes is wired for "
                                "tensorflow, pytorch, mxnet, cntk, cntk-2.5 only")
    one_machine = run(tmp_path, spec(framework="tensorflow", device="2xcpu"), python=sys.executable)
    assert one_machine["reason"] == ("2xcpu: 2 processes: tensorflow's are srun's tasks on the 2 nodes of a Slurm "
                                     "allocation; here they would share one machine")


def test_the_global_batch_must_split_over_every_device():
    config = validated({**GOOD, "devices": ["2xgpu1"], "benchmarks": [
        {"dataset": "mnist", "networks": ["lenet"], "batch_size": 63, "iterations": 20}]})
    with pytest.raises(ConfigError, match=r"63 cannot be split over 2 devices \(lenet on 2xgpu1\)"):
        cases(config)


def test_a_parameter_server_role_that_dies_fails_the_group_at_once_naming_it(capfd):
    """A scheduler that dies (as one whose mxnet import fails does) leaves its workers waiting for it forever: the
    group ends within the workers' grace, its last line naming the role, and nothing of it is left."""
    import time

    from dlbench.run import ps_lite

    waiting = [sys.executable, "-c", "import time; time.sleep(120)"]
    started = time.monotonic()
    code = ps_lite.run_group([("scheduler", [sys.executable, "-c", "import sys; sys.exit(3)"], {}),
                              ("server", waiting, {})], [("worker 0", waiting, {}), ("worker 1", waiting, {})])
    assert code == 1 and time.monotonic() - started < ps_lite.WORKERS_GRACE_S + 20
    said = capfd.readouterr().err.strip().splitlines()[-1]
    assert said == ("dlbench.run.ps_lite: MXNet's parameter-server scheduler exited with code 3 before the workers had "
                    "finished; they were stopped (the role's own output above says why)")
    assert not processes_of_this_test("time.sleep(120)")
    # a worker that fails ends the group with its code, whatever the roles do
    failing = [sys.executable, "-c", "import sys; sys.exit(7)"]
    assert ps_lite.run_group([("server", waiting, {})], [("worker 0", failing, {}), ("worker 1", waiting, {})]) == 7
    assert capfd.readouterr().err.strip().endswith("MXNet's worker 0 exited with code 7")
    assert not processes_of_this_test("time.sleep(120)")


def test_the_parameter_server_roles_import_mxnet_with_cudas_libraries_loaded_first(tmp_path, monkeypatch):
    """MXNet's CUDA build names CUDA 11's libraries, which only the environment's nvidia-* wheels have: the scheduler
    and servers load them before mxnet, as the backend does (a CPU build, without the wheels: mxnet alone)."""
    from dlbench.envs import cuda_wheels
    from dlbench.run import ps_lite

    monkeypatch.setattr(cuda_wheels, "wheels_directory", lambda prefix=None: tmp_path)
    assert ps_lite.helper_command()[:2] == [sys.executable, "-c"] and len(ps_lite.helper_command()) == 3
    for library in cuda_wheels.CUDA_11:
        (tmp_path / library).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / library).write_bytes(b"")
    command = ps_lite.helper_command()
    assert command[2].endswith("; import mxnet") and command[3:] == [str(tmp_path / lib) for lib in cuda_wheels.CUDA_11]
