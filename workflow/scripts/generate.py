"""Snakemake entry point: write generated stand-in archives (same names and formats as the real ones)."""
from pathlib import Path

from dlbench import datasets, files, plan
from dlbench.datasets import ilsvrc12
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    family, facts = snakemake.params.family, snakemake.params.facts  # noqa: F821
    sizes, raw_dir = facts["sizes"], Path(snakemake.output[0]).parent  # noqa: F821
    if family == "imagenet":
        ilsvrc12.generate(raw_dir, sizes["classes"], sizes["train_images"], sizes["test_images"], sizes["seed"])
    else:
        datasets.generate(family, raw_dir, sizes["train_images"], sizes["test_images"], sizes["seed"])
    files.write_json(raw_dir / plan.GENERATED_FACTS, facts, indent=1)  # what the plan compares, metadata lost or not
    print(f"generated {family} stand-in in {raw_dir}: {sizes}")
