"""Snakemake entry point: the accuracy table (accuracy, time to accuracy, seed 003's figures) as CSV and Markdown."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.accuracy import write_accuracy

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    given, out = snakemake.input, snakemake.output  # noqa: F821
    write_accuracy(Path(given.runs), Path(given.appendix), Path(out.csv), Path(out.md),
                   snakemake.params.hardware)  # noqa: F821
