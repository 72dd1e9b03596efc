"""Snakemake entry point: a dataset's training speed-up on several devices over one, on a GPU over a CPU."""
from pathlib import Path

from dlbench.figures.scaling import scaling_figure
from dlbench.jobs.joblog import logged
from dlbench.tables import read_appendix

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    scaling_figure(read_appendix(snakemake.input[0]), snakemake.wildcards.dataset, [Path(out.png), Path(out.svg)],  # noqa: F821
                   snakemake.params.hardware, snakemake.params.statistics["threshold"])  # noqa: F821
