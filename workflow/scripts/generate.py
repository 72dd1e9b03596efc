"""Snakemake entry point: write generated stand-in archives (same names and formats as the real ones)."""
from pathlib import Path

from dlbench import datasets
from dlbench.jobs import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    sizes = snakemake.params.sizes  # noqa: F821
    raw_dir = Path(snakemake.output[0]).parent  # noqa: F821
    datasets.generate(snakemake.params.family, raw_dir, sizes["train_images"], sizes["test_images"],  # noqa: F821
                      sizes["seed"])
    print(f"generated {snakemake.params.family} stand-in in {raw_dir}: {sizes}")  # noqa: F821
