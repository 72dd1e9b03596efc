"""Snakemake entry point: the API-cost table (each framework beside the one it runs on) as CSV and Markdown."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.api_cost import write_api_cost

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write_api_cost(Path(snakemake.input.appendix), Path(snakemake.input.runs), Path(out.csv), Path(out.md),  # noqa: F821
                   snakemake.params.statistics["threshold"])  # noqa: F821
