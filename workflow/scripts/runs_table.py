"""Snakemake entry point: every run record as one row of results/tables/runs.csv."""
from dlbench import files
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records
from dlbench.tables.runs import runs_table

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    table = runs_table(load_records(snakemake.input))  # noqa: F821
    files.write_text(snakemake.output[0], table.to_csv(index=False))  # noqa: F821
    print(table["status"].value_counts().to_string())
