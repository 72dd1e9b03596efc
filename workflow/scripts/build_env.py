"""Snakemake entry point: build a framework's pip virtualenv (Caffe's with Caffe) and record whether it worked."""
from pathlib import Path

from dlbench import files
from dlbench.envs import build_environment, shared_root
from dlbench.jobs.joblog import logged

# Where builds are kept, once per build whichever hardware targets ask for it: the machine's shared root where set
# (DLBENCH_VENV_ROOT; make sets it), else the workflow's own
BUILDS = Path(".venvs") / "builds"

with logged(snakemake.log[0]) as log:  # noqa: F821 - injected by Snakemake
    status_path = Path(snakemake.output[0])  # noqa: F821
    status = build_environment(Path(snakemake.input[0]), status_path.parent, snakemake.threads, log,  # noqa: F821
                               shared_root=shared_root() or BUILDS.absolute())
    print(f"{status['status']}: {status['reason']}" if status["reason"] else f"environment ready: {status['python']}")
    files.write_json(status_path, status, indent=1)
