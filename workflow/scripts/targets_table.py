"""Snakemake entry point: one hardware target over another, cell by cell."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.targets import write

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write(Path(snakemake.input[0]), Path(out.csv), Path(out.md), snakemake.params.pairs,  # noqa: F821
          snakemake.params.statistics["threshold"])  # noqa: F821
