"""Snakemake entry point: index the images in the ILSVRC12 archives (real ones fetched and verified)."""
from pathlib import Path

from dlbench import datasets
from dlbench.datasets import ilsvrc12
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    if Path(snakemake.input[0]).name == "fetch.json":  # noqa: F821 - the user's archives
        datasets.require_fetched(snakemake.input[0])  # noqa: F821
    ilsvrc12.build_index(Path(snakemake.params.raw_dir), Path(snakemake.output[0]).parent)  # noqa: F821
