"""The Snakemake process beside the runs it starts: it must not take the cores they are measured on.

Snakemake 9's scheduler, under its default job rate limit (``--max-jobs-per-timespan 100/1s``), ends every round
in which jobs wait for cores by starting a timer that wakes it a second later, and that round starts another
timer: each finished job adds a chain of rounds that never ends while jobs wait. On this 2-core machine, with 180
runs waiting for one to finish, the Snakemake process took a quarter of a core by the 88th job (5 s of CPU in 20 s,
one round of every ready job's resources and the job selector each time) and more with each job after, beside
the run it was measuring: the runs' records showed 8 to 26 % of their cores taken by other processes.
A local job is bounded by the cores and GPUs it asks for; no rate limit is needed there. A cluster executor's
limit stays: it paces submissions to Slurm from a node that measures nothing.
"""
from __future__ import annotations


def lift_local_rate_limit(workflow) -> bool:
    """Called from the Snakefile's ``onstart`` (the scheduler exists, no job has started): drop the job rate limit
    of a workflow that runs its jobs on this machine. True if it was dropped."""
    scheduler = getattr(workflow, "scheduler", None)
    if scheduler is None or not workflow.local_exec or scheduler.job_rate_limiter is None:
        return False
    scheduler.job_rate_limiter = None  # Snakemake's own "no limit" (its --max-jobs-per-timespan unset)
    return True
