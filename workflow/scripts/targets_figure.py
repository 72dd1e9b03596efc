"""Snakemake entry point: the speed-up of one hardware target over another, a bar per cell."""
from pathlib import Path

import pandas as pd
from dlbench.figures.targets import targets_figure
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out = snakemake.output  # noqa: F821
    targets_figure(pd.read_csv(snakemake.input[0], dtype={"target": str, "baseline": str}),  # noqa: F821
                   [Path(out.png), Path(out.svg)])
