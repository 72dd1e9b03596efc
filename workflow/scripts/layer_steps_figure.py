"""Snakemake entry point: every profiled step of a (dataset, network)'s profile runs, from their kept series."""
from pathlib import Path

from dlbench.figures.layer_steps import layer_steps
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    layer_steps(load_records(snakemake.input), [Path(out.png), Path(out.svg)])  # noqa: F821
