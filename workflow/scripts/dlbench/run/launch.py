"""How the monitor starts a run's training processes: one runner, or a data-parallel group of them.

A run on ``<n>x<device>`` trains over n processes: inside a Slurm allocation of n nodes one per node, elsewhere n on
this machine; on ``<m>x<k>x<device>``, m nodes of k processes each (m·k on one machine). PyTorch's launcher,
torchrun, starts them and tells each its rank: on one machine as local processes (``--standalone``); over nodes
one torchrun per node, started by ``srun``, whose processes meet at the first node (c10d rendezvous).
TensorFlow's runners are ``srun``'s tasks themselves; each finds the others from Slurm's variables
(``SlurmClusterResolver``). CNTK's one runner starts its MPI ranks itself (``backends.cntk``). MXNet's workers,
``kvstore=dist_sync``, come with the scheduler and servers of its parameter server (:mod:`dlbench.run.ps_lite`): all
on one machine, or each of ``srun``'s tasks with its own server. A process of the group that fails ends the
others (srun's ``--kill-on-bad-exit``).
"""
from __future__ import annotations

import os

from ..hardware.cluster import RENDEZVOUS_PORT, first_node, local_processes
from ..registry import REGISTRY
from ..spec import device_layout


class NotLaunchable(Exception):
    """The run's processes cannot be started here."""


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
    runner = ["-m", "dlbench.run.runner", *arguments]
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
            return [python, "-m", "dlbench.run.ps_lite", "local", str(processes), *arguments]
        return [*_srun(nodes, per_node), python, "-m", "dlbench.run.ps_lite", "node", str(processes), *arguments]
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
