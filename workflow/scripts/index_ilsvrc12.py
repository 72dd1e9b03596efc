"""Snakemake entry point: verify the ILSVRC12 archives (real data) and index the images in them."""
from pathlib import Path

from dlbench import ilsvrc12
from dlbench.jobs import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    ilsvrc12.build_index(Path(snakemake.input[0]).parent, Path(snakemake.output[0]).parent,  # noqa: F821
                         snakemake.params.md5)  # noqa: F821
