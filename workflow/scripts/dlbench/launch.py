"""How the monitor starts a run's training processes: one runner, or a data-parallel group of them.

A run on ``<n>x<device>`` trains over n processes: inside a Slurm allocation of n nodes one per node, elsewhere n on
this machine; on ``<m>x<k>x<device>``, m nodes of k processes each (m·k on one machine). PyTorch's launcher,
torchrun, starts them and tells each its rank: on one machine as local processes (``--standalone``); over nodes
one torchrun per node, started by ``srun``, whose processes meet at the first node (c10d rendezvous).
TensorFlow's runners are ``srun``'s tasks themselves; each finds the others from Slurm's variables
(``SlurmClusterResolver``). CNTK's one runner starts its MPI ranks itself (``backends.cntk``). MXNet's workers,
``kvstore=dist_sync``, come with the scheduler and servers of its parameter server (:mod:`dlbench.ps_lite`): all
on one machine, or each of ``srun``'s tasks with its own server. A process of the group that fails ends the
others (srun's ``--kill-on-bad-exit``).
"""
from __future__ import annotations

import os
import socket
import subprocess

from .registry import REGISTRY
from .spec import device_layout

RENDEZVOUS_PORT = 29500
TENSORFLOW_PORT = 29510  # each node's TensorFlow worker serves its collectives here (gRPC)
MXNET_PORT = 29520  # MXNet's parameter-server scheduler, on the first node


class NotLaunchable(Exception):
    """The run's processes cannot be started here."""


def first_node(nodelist: str) -> str:
    """The first host of a Slurm node list: ``a,b`` as it is; a range (``node[01-04]``) by scontrol."""
    if "[" not in nodelist:
        return nodelist.split(",")[0]
    return subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True,
                          check=True).stdout.split()[0]


def address_towards(host: str) -> str:
    """This machine's address on its route to ``host`` (a name or an address): where that host reaches it.
    A UDP socket's connect sends nothing."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((host, 9))
        return probe.getsockname()[0]


def allocation_variables(env=os.environ) -> dict[str, str]:
    """Slurm's variables of the allocation this process runs in (its node count, node list and partition) where a
    launcher dropped them but kept ``SLURM_JOB_ID``, as Snakemake's slurm-jobstep executor does: from squeue."""
    if "SLURM_JOB_ID" not in env or "SLURM_JOB_NUM_NODES" in env:
        return {}
    found = subprocess.run(["squeue", "--noheader", "--jobs", env["SLURM_JOB_ID"], "--format=%D %N %P"],
                           capture_output=True, text=True, check=False, timeout=60)
    fields = found.stdout.split()
    if found.returncode or len(fields) != 3:
        return {}
    return dict(zip(("SLURM_JOB_NUM_NODES", "SLURM_JOB_NODELIST", "SLURM_JOB_PARTITION"), fields))


def allocation_machines(nodes: int) -> dict[str, str]:
    """The allocation's nodes a run's processes go to, each with the boot id of the kernel it runs under: nodes that
    share one are one machine (containers, network namespaces), whose cores they share."""
    found = subprocess.run(["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1", "--label",
                            "sh", "-c", 'echo "$SLURMD_NODENAME $(cat /proc/sys/kernel/random/boot_id)"'],
                           capture_output=True, text=True, check=True, timeout=120).stdout
    labelled = sorted((int(label), line.split()) for label, line in (row.split(":", 1) for row in found.splitlines()))
    return {node: boot for _, (node, boot) in labelled}


def local_processes(device: str, env=os.environ) -> int:
    """How many of the run's processes run on this machine (they share its held cores): those of one node inside a
    Slurm allocation of the device's nodes, else all."""
    nodes, per_node, _ = device_layout(device)
    return per_node if nodes > 1 and int(env.get("SLURM_JOB_NUM_NODES", "1")) >= nodes else nodes * per_node


def slurm_resources(device: str) -> dict[str, int | str]:
    """The Slurm executor plugin's resources for a training job on ``device``: a run over nodes asks for its nodes
    and tasks as an MPI job, whose processes the job starts itself (the plugin wraps no ``srun`` of its own around
    it, which would hold the allocation's cores from the runners' ``srun``); other runs ask for nothing more than
    one task (0: the plugin's default). ``tasks_per_gpu`` 0 keeps the plugin from spreading a job's tasks over its
    GPUs by ``tasks``."""
    nodes, per_node, _ = device_layout(device)
    over_nodes = nodes > 1
    # Every job has the key: Snakemake's slurm-jobstep runs a job with one directly in its batch script (no
    # "srun -n1" around it, which would hold the cores the runners' srun needs); the submission reads its value.
    return {"nodes": nodes, "mpi": "srun" if over_nodes else "",
            "tasks": nodes if over_nodes and per_node == 1 else 0,
            "tasks_per_node": per_node if over_nodes and per_node > 1 else 0, "tasks_per_gpu": 0}


def _srun(nodes: int, per_node: int) -> list[str]:
    return ["srun", f"--nodes={nodes}", f"--ntasks={nodes * per_node}", f"--ntasks-per-node={per_node}",
            "--kill-on-bad-exit=1"]


def runner_command(python: str, framework: str, device: str, arguments: list[str], env=os.environ) -> list[str]:
    runner = ["-m", "dlbench.runner", *arguments]
    nodes, per_node, _ = device_layout(device)
    processes = nodes * per_node
    if processes == 1:
        return [python, *runner]
    launcher = REGISTRY[framework].launcher
    if launcher is None:
        wired = ", ".join(name for name, f in REGISTRY.items() if f.launcher)
        raise NotLaunchable(f"{processes} processes: data parallelism over processes is wired for {wired} only")
    if launcher == "mpiexec":
        return [python, *runner]
    on_one_machine = local_processes(device, env) == processes
    if launcher == "ps-lite":
        if on_one_machine:
            return [python, "-m", "dlbench.ps_lite", "local", str(processes), *arguments]
        return [*_srun(nodes, per_node), python, "-m", "dlbench.ps_lite", "node", str(processes), *arguments]
    if launcher == "srun":
        if on_one_machine:
            raise NotLaunchable(f"{processes} processes: {framework}'s are srun's tasks on the {nodes} nodes of a "
                                "Slurm allocation; here they would share one machine")
        return [*_srun(nodes, per_node), python, *runner]
    torchrun = [python, "-m", "torch.distributed.run"]
    if on_one_machine:
        return [*torchrun, "--standalone", f"--nproc-per-node={processes}", *runner]
    endpoint = f"{first_node(env['SLURM_JOB_NODELIST'])}:{RENDEZVOUS_PORT}"
    return [*_srun(nodes, 1), *torchrun, f"--nnodes={nodes}", f"--nproc-per-node={per_node}", "--rdzv-backend=c10d",
            f"--rdzv-id={env['SLURM_JOB_ID']}", f"--rdzv-endpoint={endpoint}", *runner]
