"""The Snakemake process stays out of the runs' way: no scheduling rounds while a local job runs and others wait."""
import subprocess
import sys

import pytest

from ...conftest import ROOT

JOBS = 6
# Six jobs of a second each on one core: while one runs, the others wait for the core.
SNAKEFILE = f"""
import sys
sys.path.insert(0, {str(ROOT / "workflow" / "scripts")!r})
from dlbench.jobs import scheduler

onstart:
    if config.get("lift"):
        scheduler.lift_local_rate_limit(workflow)

rule all:
    input: expand("out/{{i}}.txt", i=range({JOBS}))

rule one:
    output: "out/{{i}}.txt"
    shell: "sleep 1 && touch {{output}}"
"""


def _scheduling_rounds(tmp_path, lift: bool) -> int:
    """How many times Snakemake weighed the waiting jobs (its debug line "Ready jobs: n" each round)."""
    workdir = tmp_path / ("lifted" if lift else "default")
    workdir.mkdir()
    (workdir / "Snakefile").write_text(SNAKEFILE)
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--verbose", "--config",
                           f"lift={lift}"], cwd=workdir, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return (done.stdout + done.stderr).count("Ready jobs: ")


@pytest.mark.parametrize("lift", [False, True])
def test_a_local_workflow_weighs_its_waiting_jobs_once_per_finished_job(tmp_path, lift):
    """Snakemake's rate limit makes each round start another a second later, and every finished job adds such a
    chain (the count grows with the square of the jobs): without it, one round per job that ends."""
    rounds = _scheduling_rounds(tmp_path, lift)
    if lift:
        assert rounds <= JOBS + 1
    else:  # what the lift is for: Snakemake as it is (shows that this test can tell the two apart)
        assert rounds > 2 * JOBS
