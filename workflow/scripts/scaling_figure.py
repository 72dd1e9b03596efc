"""Snakemake entry point: a dataset's training speed-up on several devices over one."""
from pathlib import Path

import pandas as pd
from dlbench.joblog import logged
from dlbench.plots import scaling_figure

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    scaling_figure(pd.read_csv(snakemake.input[0]), snakemake.wildcards.dataset, [Path(out.png), Path(out.svg)])  # noqa: F821
