"""How the monitor starts a run's training processes: one runner, or a data-parallel group of them.

A run on ``<n>x<device>`` trains over n processes. PyTorch's launcher, torchrun, starts them and
tells each its rank: on one machine as n local processes (``--standalone``); inside a Slurm allocation
of n nodes as one process per node, started by ``srun``, that meet at the first node (c10d rendezvous).
TensorFlow's runners are started by ``srun`` itself, one per node of an allocation of n nodes; each finds
the others from Slurm's variables (``SlurmClusterResolver``). CNTK's one runner starts its MPI ranks
itself (``backends.cntk``). MXNet's workers, ``kvstore=dist_sync``, come with the scheduler and servers of its
parameter server (:mod:`dlbench.ps_lite`): all n on one machine, or one of each per node started by ``srun``.
A process of the group that fails ends the others (srun's ``--kill-on-bad-exit``).
"""
from __future__ import annotations

import os
import socket
import subprocess

from .registry import REGISTRY

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


def allocation_machines(processes: int) -> dict[str, str]:
    """The nodes a run's processes go to, one per node of the Slurm allocation, each with the boot id of the kernel
    it runs under: nodes that share one are one machine (containers, network namespaces), whose cores they share."""
    found = subprocess.run(["srun", f"--nodes={processes}", f"--ntasks={processes}", "--ntasks-per-node=1", "--label",
                            "sh", "-c", 'echo "$SLURMD_NODENAME $(cat /proc/sys/kernel/random/boot_id)"'],
                           capture_output=True, text=True, check=True, timeout=120).stdout
    labelled = sorted((int(label), line.split()) for label, line in (row.split(":", 1) for row in found.splitlines()))
    return {node: boot for _, (node, boot) in labelled}


def local_processes(processes: int, env=os.environ) -> int:
    """How many of the run's processes run on this machine (they share its held cores)."""
    return 1 if int(env.get("SLURM_JOB_NUM_NODES", "1")) >= processes > 1 else processes


def runner_command(python: str, framework: str, processes: int, arguments: list[str], env=os.environ) -> list[str]:
    runner = ["-m", "dlbench.runner", *arguments]
    if processes == 1:
        return [python, *runner]
    launcher = REGISTRY[framework].launcher
    if launcher is None:
        wired = ", ".join(name for name, f in REGISTRY.items() if f.launcher)
        raise NotLaunchable(f"{processes} processes: data parallelism over processes is wired for {wired} only")
    if launcher == "mpiexec":
        return [python, *runner]
    one_per_node = ["srun", f"--nodes={processes}", f"--ntasks={processes}", "--ntasks-per-node=1",
                    "--kill-on-bad-exit=1"]
    if launcher == "ps-lite":
        if local_processes(processes, env) == processes:
            return [python, "-m", "dlbench.ps_lite", "local", str(processes), *arguments]
        return [*one_per_node, python, "-m", "dlbench.ps_lite", "node", str(processes), *arguments]
    if launcher == "srun":
        if local_processes(processes, env) == processes:
            raise NotLaunchable(f"{processes} processes: {framework} runs one per node of a Slurm allocation of "
                                f"{processes} nodes (srun); here they would share one machine")
        return [*one_per_node, python, *runner]
    torchrun = [python, "-m", "torch.distributed.run"]
    if local_processes(processes, env) == processes:
        return [*torchrun, "--standalone", f"--nproc-per-node={processes}", *runner]
    return [*one_per_node, *torchrun,
            f"--nnodes={processes}", "--nproc-per-node=1", "--rdzv-backend=c10d", f"--rdzv-id={env['SLURM_JOB_ID']}",
            f"--rdzv-endpoint={first_node(env['SLURM_JOB_NODELIST'])}:{RENDEZVOUS_PORT}", *runner]
