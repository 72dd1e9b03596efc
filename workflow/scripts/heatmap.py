"""Snakemake entry point: a dataset's heatmap of a training metric against the best framework's per network."""
from pathlib import Path

import pandas as pd
from dlbench.joblog import logged
from dlbench.plots import heatmap

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out, wildcards = snakemake.output, snakemake.wildcards  # noqa: F821
    heatmap(pd.read_csv(snakemake.input[0]), wildcards.dataset, wildcards.metric, [Path(out.png), Path(out.svg)])  # noqa: F821
