"""Snakemake entry point: one shard of ILSVRC12 into one framework's native format."""
from pathlib import Path

from dlbench.datasets import FAMILIES
from dlbench.formats import jobs
from dlbench.jobs.joblog import logged

with logged(snakemake.log[0], writes_to=snakemake.output[0]):  # noqa: F821 - injected by Snakemake
    w, family = snakemake.wildcards, FAMILIES["imagenet"]  # noqa: F821
    shard = {"format": w.format, "split": w.split, "index": int(w.index), "count": int(w.shards),
             "encoding": family.encoding, "image_shape": family.image_shape, "seed": 0}
    jobs.run({"kind": "shard", "shard": shard, "archive_dir": snakemake.params.archive_dir,  # noqa: F821
              "index_dir": str(Path(snakemake.input.index[0]).parent), "output": snakemake.output[0]},  # noqa: F821
             snakemake.input.get("environment"))  # noqa: F821
