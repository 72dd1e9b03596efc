"""Snakemake entry point: ours against the thesis's, a point per cell."""
from pathlib import Path

import pandas as pd
from dlbench.figures.thesis import thesis_figure
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    thesis_figure(pd.read_csv(snakemake.input[0]), [Path(out.png), Path(out.svg)])  # noqa: F821
