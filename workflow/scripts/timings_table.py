"""Snakemake entry point: where the runs' time went (results/timings.md, results/timings.csv)."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records
from dlbench.tables.timings import write_timings

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write_timings(load_records(snakemake.input), Path(out.csv), Path(out.md))  # noqa: F821
