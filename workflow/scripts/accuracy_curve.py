"""Snakemake entry point: test accuracy over time for a (dataset, network)'s accuracy runs."""
from pathlib import Path

from dlbench.figures.accuracy import accuracy_curves
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    accuracy_curves(load_records(snakemake.input), [Path(out.png), Path(out.svg)])  # noqa: F821
