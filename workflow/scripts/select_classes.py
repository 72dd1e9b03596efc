"""Snakemake entry point: the index of a class subset of ILSVRC12 (seed 004's ten classes), from the whole one."""
from pathlib import Path

from dlbench.datasets import ilsvrc12
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    ilsvrc12.select_classes(Path(snakemake.input[0]).parent, Path(snakemake.output[0]).parent,  # noqa: F821
                            snakemake.params.classes)  # noqa: F821
