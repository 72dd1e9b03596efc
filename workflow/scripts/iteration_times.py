"""Snakemake entry point: every training step's time in a (dataset, network) cell."""
from pathlib import Path

from dlbench.figures.iterations import iteration_times
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    iteration_times(load_records(snakemake.input), [Path(out.png), Path(out.svg)], snakemake.params.hardware)  # noqa: F821
