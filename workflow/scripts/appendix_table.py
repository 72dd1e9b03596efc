"""Snakemake entry point: the Appendix-A-style table as CSV, Markdown and LaTeX."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.appendix import write_appendix

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write_appendix(Path(snakemake.input[0]), Path(out.csv), Path(out.md), Path(out.tex), snakemake.params.hardware,  # noqa: F821
                   snakemake.params.statistics["contended"])  # noqa: F821
