"""Snakemake entry point: an unpacked in-memory dataset into one framework's native format."""
from dlbench.formats import jobs
from dlbench.jobs.joblog import logged
from dlbench.spec import parse_dataset_label

with logged(snakemake.log[0], writes_to=snakemake.output[0]):  # noqa: F821 - injected by Snakemake
    family, _ = parse_dataset_label(snakemake.wildcards.dataset)  # noqa: F821
    jobs.run({"kind": "convert", "format": snakemake.wildcards.format, "family": family,  # noqa: F821
              "data_dir": snakemake.params.unpacked, "output": snakemake.output[0], "seed": 0},  # noqa: F821
             snakemake.input.get("environment"))  # noqa: F821
