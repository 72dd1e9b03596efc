"""Snakemake entry point: the accuracy table (accuracy, time to accuracy, seed 003's figures) as CSV and Markdown."""
from pathlib import Path

from dlbench.aggregate import write_accuracy
from dlbench.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    write_accuracy(Path(snakemake.input[0]), Path(out.csv), Path(out.md))  # noqa: F821
