"""Snakemake entry point: one bar chart for a (dataset, network, metric), from the appendix's cells."""
from pathlib import Path

from dlbench.figures.bars import bars
from dlbench.joblog import logged
from dlbench.tables import read_appendix

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out, wildcards = snakemake.output, snakemake.wildcards  # noqa: F821
    appendix = read_appendix(snakemake.input[0])  # noqa: F821
    bars(appendix, wildcards.dataset, wildcards.network, wildcards.metric, [Path(out.png), Path(out.svg)])
