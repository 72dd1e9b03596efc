"""Snakemake entry point: an unpacked dataset into one framework's native format (both splits)."""
from pathlib import Path

from dlbench import formats
from dlbench.jobs import logged
from dlbench.spec import parse_dataset_label

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    family, _ = parse_dataset_label(snakemake.wildcards.dataset)  # noqa: F821
    output = Path(snakemake.output[0])  # noqa: F821
    stats = formats.convert(snakemake.wildcards.format, family, Path(snakemake.params.unpacked), output)  # noqa: F821
    for split, numbers in stats.items():
        print(f"{split}: {numbers['images']} images in {numbers['seconds']:.1f} s "
              f"({numbers['images_per_second']:,.0f} images/s)")
