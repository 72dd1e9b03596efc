"""Snakemake entry point: unpack a dataset's archives (real ones fetched and verified) into data/<dataset>/."""
from pathlib import Path

from dlbench import datasets
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    if Path(snakemake.input[0]).name == "fetch.json":  # noqa: F821 - real data
        datasets.require_fetched(snakemake.input[0])  # noqa: F821
    raw_dir = Path(snakemake.input[0]).parent  # noqa: F821 - data/raw/<dataset>: its archives, or their fetch status
    out_dir = Path("data") / raw_dir.name
    datasets.unpack(snakemake.params.family, raw_dir, out_dir)  # noqa: F821
    print(f"unpacked {raw_dir} into {out_dir}")
