"""Snakemake entry point: what this node can measure (dlbench.hardware.node.measure): which figures are drawn."""
from pathlib import Path

from dlbench import files
from dlbench.hardware import node
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    measured = node.measure()
    files.write_json(Path(snakemake.output[0]), measured, indent=1)  # noqa: F821
    print(measured)
