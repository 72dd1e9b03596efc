"""Snakemake entry point: verify (real data) and unpack archives into data/<dataset>/."""
from pathlib import Path

from dlbench import datasets
from dlbench.jobs import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    raw_dir = Path(snakemake.input[0]).parent  # noqa: F821
    out_dir = Path("data") / raw_dir.name
    datasets.unpack(snakemake.params.family, raw_dir, out_dir, snakemake.params.md5)  # noqa: F821
    print(f"unpacked {raw_dir} into {out_dir}")
