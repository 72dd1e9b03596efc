"""Snakemake entry point: a dataset's heatmap of training speed over the fastest framework's."""
from pathlib import Path

import pandas as pd
from dlbench.jobs import logged
from dlbench.plots import speed_heatmap

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    speed_heatmap(pd.read_csv(snakemake.input[0]), snakemake.wildcards.dataset, [Path(out.png), Path(out.svg)])  # noqa: F821
