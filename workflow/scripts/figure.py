"""Snakemake entry point: one bar chart for a (dataset, network, metric)."""
from pathlib import Path

from dlbench.joblog import logged
from dlbench.plots import figure
from dlbench.record import load_records

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    figure(load_records(snakemake.input), snakemake.wildcards.metric, [Path(out.png), Path(out.svg)])  # noqa: F821
