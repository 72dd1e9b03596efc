"""MXNet's data parallelism over processes: the roles of its parameter server, ps-lite (``kvstore=dist_sync``).

n workers train; a scheduler introduces them to the servers, which hold the weights, sum the workers'
gradients and apply the optimizer. MXNet's own launcher (tools/launch.py) starts one server per worker; so
does this one. Every role is the same Python, told its part by ``DMLC_*`` variables: importing mxnet as a
server or the scheduler serves until the workers have finished; a worker is a runner.

``python -m dlbench.run.ps_lite local <n> <runner arguments>`` starts them all on this machine, on the loopback.
``srun … python -m dlbench.run.ps_lite node <n> <runner arguments>`` runs once on each node of an allocation of n:
its server, the scheduler on the first node, and its worker (ranked by Slurm's task number). The scheduler's
address is the first node's; each role advertises the address this node reaches it from.

A server waits for its workers forever: when a worker fails, the others and the roles started here are
stopped, and the launcher exits with the worker's code. Standard library only (it runs in the mxnet
environment before mxnet is imported).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from ..hardware import cluster

SERVERS_GRACE_S = 30  # for the servers and the scheduler to see the workers' goodbye and exit


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def roles(mode: str, workers: int, env=os.environ) -> tuple[dict, list[str], list[int]]:
    """The group's ``DMLC_*`` variables, the helper roles to start here, and the ranks of the workers here."""
    if mode == "local":
        root = host = "127.0.0.1"
        port = free_port()
        helpers, ranks = ["scheduler"] + ["server"] * workers, list(range(workers))
    elif mode == "node":
        root, port = socket.gethostbyname(cluster.first_node(env["SLURM_JOB_NODELIST"])), cluster.MXNET_PORT
        host = cluster.address_towards(root)
        rank = int(env["SLURM_PROCID"])
        helpers, ranks = (["scheduler"] if rank == 0 else []) + ["server"], [rank]
    else:
        raise ValueError(f"mode {mode!r}: local or node")
    group = {"DMLC_PS_ROOT_URI": root, "DMLC_PS_ROOT_PORT": str(port), "DMLC_NODE_HOST": host,
             "DMLC_NUM_SERVER": str(workers), "DMLC_NUM_WORKER": str(workers)}
    return group, helpers, ranks


def main(argv: list[str]) -> int:
    mode, workers, runner_arguments = argv[0], int(argv[1]), argv[2:]
    group, helpers, ranks = roles(mode, workers)
    started = []
    try:
        for role in helpers:
            started.append(subprocess.Popen([sys.executable, "-c", "import mxnet"],
                                            env={**os.environ, **group, "DMLC_ROLE": role}))
        # RANK: the worker that speaks for the group (tasks.first_process); ps-lite numbers them itself
        workers_here = [subprocess.Popen([sys.executable, "-m", "dlbench.run.runner", *runner_arguments],
                                         env={**os.environ, **group, "DMLC_ROLE": "worker", "RANK": str(rank)})
                        for rank in ranks]
        started += workers_here
        failed = first_failure(workers_here)
        if not failed:
            deadline = time.monotonic() + SERVERS_GRACE_S
            while any(helper.poll() is None for helper in started) and time.monotonic() < deadline:
                time.sleep(0.2)
        return failed
    finally:
        for process in started:
            if process.poll() is None:
                process.kill()
                process.wait()


def first_failure(processes: list[subprocess.Popen]) -> int:
    """Once all have exited, 0; as soon as one fails, its exit code."""
    while True:
        codes = [process.poll() for process in processes]
        failed = [code for code in codes if code]
        if failed or None not in codes:
            return failed[0] if failed else 0
        time.sleep(0.2)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
