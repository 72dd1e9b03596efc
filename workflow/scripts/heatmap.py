"""Snakemake entry point: a dataset's heatmap of a training metric against the best framework's per network."""
from pathlib import Path

from dlbench.figures.heatmap import heatmap
from dlbench.jobs.joblog import logged
from dlbench.tables import read_appendix

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out, wildcards = snakemake.output, snakemake.wildcards  # noqa: F821
    heatmap(read_appendix(snakemake.input[0]), wildcards.dataset, wildcards.metric, [Path(out.png), Path(out.svg)],  # noqa: F821
            snakemake.params.hardware, snakemake.params.statistics["threshold"])  # noqa: F821
