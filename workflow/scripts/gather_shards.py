"""Snakemake entry point: a format's directory over the shards written by their own jobs."""
from pathlib import Path

from dlbench import files, formats
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    with files.staged_directory(Path(snakemake.output[0])) as scratch:  # noqa: F821
        formats.link_shards(scratch, [Path(shard) for shard in snakemake.input.shards])  # noqa: F821
        stats = formats.finish(snakemake.wildcards.format, scratch, snakemake.params.source)  # noqa: F821
    for split, numbers in stats.items():
        print(f"{split}: {len(numbers['shards'])} shards, {numbers['images']} images, "
              f"{numbers['images_per_second']:,.1f} images/s per job")
