"""Snakemake entry point: a real dataset's archives, downloaded or the user's, verified; fetch.json says
ok or names every archive that cannot be had (the job itself never fails on that)."""
from pathlib import Path

from dlbench import datasets, files
from dlbench.config import mirrors
from dlbench.datasets import ilsvrc12
from dlbench.jobs.joblog import logged

RETRY = "then: make retry-failed (or remove the failed run records and this fetch.json)"

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    family, config = snakemake.wildcards.family, snakemake.config  # noqa: F821
    directory = Path(snakemake.params.archive_dir)  # noqa: F821
    if family == "imagenet":
        expected, sources = ilsvrc12.ARCHIVES, []
        remedy = (f"Put the archives published by image-net.org into {directory} "
                  f"(config key ilsvrc12.directory); {RETRY}")
    else:
        expected, sources = datasets.FAMILIES[family].archives, mirrors(config, family)
        remedy = (f"Replace a bad archive with the published file, or delete it to have it downloaded; check the "
                  f"mirrors (config key mirrors.{family}); {RETRY}")
    status = datasets.obtain(family, directory, expected, sources, remedy)
    print(status["reason"] or f"{family}: every archive in {directory} verified")
    files.write_json(Path(snakemake.output[0]), status, indent=1)  # noqa: F821
