"""Run by tests/workflow/test_slurm_nodes.py as the command of a Slurm allocation: one run under the monitor
(``python monitored_run.py <spec.json> <directory> [<the runner's python> [<CNTK's worker python>]]``), its record
and log written to the directory."""
import sys
from pathlib import Path

from dlbench.record.io import write_record
from dlbench.run import monitor
from dlbench.spec import RunSpec

spec, directory = RunSpec.load(Path(sys.argv[1])), Path(sys.argv[2])
pythons = sys.argv[3:]
python, worker_python = (pythons[0] if pythons else sys.executable), (pythons[1] if len(pythons) > 1 else None)
write_record(monitor.run(spec, python, directory / "run.log", 300, 20, "sha", worker_python=worker_python),
             directory / "rep1.json")
