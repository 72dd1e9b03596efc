"""Snakemake entry point: each framework's release line as a figure, the thesis's value marked."""
from pathlib import Path

import pandas as pd
from dlbench.figures.release_lines import release_lines_figure
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    release_lines_figure(pd.read_csv(snakemake.input.points, dtype={"version": str, "released": str}),  # noqa: F821
                         pd.read_csv(snakemake.input.thesis),  # noqa: F821
                         [Path(snakemake.output.png), Path(snakemake.output.svg)])  # noqa: F821
