"""Snakemake entry point: one bar chart for a (dataset, network, metric).

Its input is its cell's records, not appendix.csv, so that rebuilding one figure never waits for every other
run to be brought up to date; its numbers are the appendix's all the same: the same functions make them
(tables.runs.runs_table, then tables.appendix.appendix)."""
from pathlib import Path

from dlbench.figures.bars import bars
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records
from dlbench.tables.appendix import appendix
from dlbench.tables.runs import runs_table

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out, wildcards = snakemake.output, snakemake.wildcards  # noqa: F821
    cells = appendix(runs_table(load_records(snakemake.input)), snakemake.params.statistics["contended"])  # noqa: F821
    bars(cells, wildcards.dataset, wildcards.network, wildcards.metric, [Path(out.png), Path(out.svg)],
         snakemake.params.hardware)  # noqa: F821
