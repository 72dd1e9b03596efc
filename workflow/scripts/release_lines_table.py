"""Snakemake entry point: each framework's release line, cell by cell, and the steps along it."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.release_lines import write

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write(Path(snakemake.input.appendix), Path(snakemake.input.runs), Path(out.points), Path(out.csv),  # noqa: F821
          Path(out.md), snakemake.params.statistics["threshold"])  # noqa: F821
