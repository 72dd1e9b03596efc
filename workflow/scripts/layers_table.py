"""Snakemake entry point: the profile runs' table (overhead, unaccounted share, most expensive layers)."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.layers import write_layers

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    given, out = snakemake.input, snakemake.output  # noqa: F821
    write_layers(list(map(Path, given.records)), Path(given.appendix), Path(out.csv), Path(out.md))
