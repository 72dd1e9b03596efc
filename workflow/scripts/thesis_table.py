"""Snakemake entry point: our cells beside the thesis's Appendix A, and whether the frameworks rank alike."""
from pathlib import Path

from dlbench.jobs.joblog import logged
from dlbench.tables.thesis import write

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    out, given = snakemake.output, snakemake.input  # noqa: F821
    write(Path(given.appendix), Path(given.runs), Path(out.csv), Path(out.ranks), Path(out.md), Path(out.appendix_a),
          snakemake.params.thesis_gpus, snakemake.params.statistics["threshold"])  # noqa: F821
