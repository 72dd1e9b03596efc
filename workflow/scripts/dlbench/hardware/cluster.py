"""The nodes of a run: Slurm's allocation, how many of a run's processes share this machine, and where the nodes
reach each other (their ports, the first node, this machine's address towards another)."""
from __future__ import annotations

import os
import socket
import subprocess

from ..spec import device_layout

RENDEZVOUS_PORT = 29500
TENSORFLOW_PORT = 29510  # each node's TensorFlow worker serves its collectives here (gRPC)
MXNET_PORT = 29520  # MXNet's parameter-server scheduler, on the first node


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
