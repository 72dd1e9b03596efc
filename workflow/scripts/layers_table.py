"""Snakemake entry point: the profile runs' table (overhead, unaccounted share, most expensive layers)."""
from pathlib import Path

from dlbench.aggregate import write_layers
from dlbench.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write_layers(list(map(Path, snakemake.input.records)), Path(snakemake.input.runs), Path(out.csv), Path(out.md))  # noqa: F821
