"""Snakemake entry point: time per layer in a profiled training step, for a (dataset, network)'s profile runs."""
from pathlib import Path

from dlbench.figures.layers import layer_times
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    layer_times(load_records(snakemake.input), [Path(out.png), Path(out.svg)])  # noqa: F821
