"""MXNet's data parallelism over processes: the roles of its parameter server, ps-lite (``kvstore=dist_sync``).

n workers train; a scheduler introduces them to the servers, which hold the weights, sum the workers'
gradients and apply the optimizer. MXNet's own launcher (tools/launch.py) starts one server per worker; so
does this one. Every role is the same Python, told its part by ``DMLC_*`` variables: importing mxnet as a
server or the scheduler serves until the workers have finished; a worker is a runner.

``python -m dlbench.run.ps_lite local <n> <runner arguments>`` starts them all on this machine, on the loopback.
``srun … python -m dlbench.run.ps_lite node <n> <runner arguments>`` runs once on each node of an allocation of n:
its server, the scheduler on the first node, and its worker (ranked by Slurm's task number). The scheduler's
address is the first node's; each role advertises the address this node reaches it from.

A server waits for its workers forever, and a worker for a scheduler that is gone: the launcher watches every
process it started. When a worker fails, or a scheduler or server ends before the workers have (at its import:
MXNet's CUDA build without its libraries), the others are stopped and the launcher exits non-zero, its last line
naming which process ended how. Every role imports mxnet as a worker does, CUDA's libraries from the ``nvidia-*``
wheels loaded first (:mod:`dlbench.envs.cuda_wheels`). Standard library only (it runs in the mxnet environment
before mxnet is imported).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

from ..envs import cuda_wheels
from ..hardware import cluster

SERVERS_GRACE_S = 30  # for the servers and the scheduler to see the workers' goodbye and exit
# A scheduler or server may end as the last worker says goodbye, before that worker's process has exited
WORKERS_GRACE_S = 5


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


def helper_command() -> list[str]:
    """A scheduler's or server's command: mxnet imported as the backend imports it, CUDA's libraries first where the
    environment has the wheels (a CPU build: none)."""
    libraries = [path for path in cuda_wheels.preloaded("mxnet") if path.exists()]
    return [sys.executable, *cuda_wheels.preloading("import mxnet", libraries)]


def main(argv: list[str]) -> int:
    mode, workers, runner_arguments = argv[0], int(argv[1]), argv[2:]
    group, helpers, ranks = roles(mode, workers)
    # RANK: the worker that speaks for the group (tasks.first_process); ps-lite numbers them itself
    return run_group([(role, helper_command(), {**group, "DMLC_ROLE": role}) for role in helpers],
                     [(f"worker {rank}", [sys.executable, "-m", "dlbench.run.runner", *runner_arguments],
                       {**group, "DMLC_ROLE": "worker", "RANK": str(rank)}) for rank in ranks])


def run_group(helpers: list[tuple[str, list[str], dict]], workers: list[tuple[str, list[str], dict]]) -> int:
    """Start the helpers (scheduler, servers) and the workers, each ``(name, command, variables)``; 0 once every
    worker has ended well, else non-zero as soon as a worker fails or a helper ends before the workers (its
    grace aside), saying which on standard error. Whatever is left is stopped."""
    started = []  # (name, process)
    try:
        for name, command, variables in [*helpers, *workers]:
            started.append((name, subprocess.Popen(command, env={**os.environ, **variables})))
        failed = first_failure(started[:len(helpers)], started[len(helpers):])
        if not failed:
            deadline = time.monotonic() + SERVERS_GRACE_S
            while any(process.poll() is None for _, process in started) and time.monotonic() < deadline:
                time.sleep(0.2)
        return failed
    finally:
        for _, process in started:
            if process.poll() is None:
                process.kill()
                process.wait()


def first_failure(helpers: list[tuple[str, subprocess.Popen]], workers: list[tuple[str, subprocess.Popen]]) -> int:
    """Once every worker has exited well, 0; as soon as one fails, its exit code; where a helper ends first and
    the workers do not all end well within :data:`WORKERS_GRACE_S`, 1. Either way the reason is the last line on
    standard error."""
    ended_helper = None
    while True:
        codes = [process.poll() for _, process in workers]
        failed = [(name, code) for (name, _), code in zip(workers, codes) if code]
        if failed:
            name, code = failed[0]
            print(f"dlbench.run.ps_lite: MXNet's {name} exited with code {code}", file=sys.stderr, flush=True)
            return code
        if None not in codes:
            return 0
        gone = [(name, process.returncode) for name, process in helpers if process.poll() is not None]
        if gone and ended_helper is None:
            ended_helper = gone[0], time.monotonic()
        if ended_helper and time.monotonic() - ended_helper[1] > WORKERS_GRACE_S:
            (name, code), _ = ended_helper
            print(f"dlbench.run.ps_lite: MXNet's parameter-server {name} exited with code {code} before the "
                  "workers had finished; they were stopped (the role's own output above says why)",
                  file=sys.stderr, flush=True)
            return 1
        time.sleep(0.2)

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
