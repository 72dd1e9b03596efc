"""Snakemake entry point: every profiled step of a (dataset, network)'s profile runs, from their kept series: the
blocks' times, the error and the total beside the profiled time; and each block's forward and backward passes."""
from pathlib import Path

from dlbench.figures.layer_steps import layer_phases, layer_steps
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out, records = snakemake.output, load_records(snakemake.input)  # noqa: F821
    layer_steps(records, [Path(out.png), Path(out.svg)])
    layer_phases(records, [Path(out.phases_png), Path(out.phases_svg)])
