"""Snakemake entry point: fetch one archive from the first mirror that serves it intact."""
from pathlib import Path

from dlbench import datasets
from dlbench.jobs import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    target = Path(snakemake.output[0])  # noqa: F821
    datasets.download(snakemake.wildcards.family, target.name, target, snakemake.params.mirrors)  # noqa: F821
