"""Snakemake entry point: one node's matrix-product ceiling in one precision, for the runs' ceiling_fraction."""
from pathlib import Path

from dlbench import envs
from dlbench.hardware import slots
from dlbench.jobs.joblog import logged
from dlbench.run import ceiling
from dlbench.spec import parse_placement

with logged(snakemake.log[0]) as log:  # noqa: F821 - injected by Snakemake
    wildcards, config = snakemake.wildcards, snakemake.config  # noqa: F821
    _, processor = parse_placement(wildcards.processor)  # after the hardware target's name, where it has one
    environment = envs.status(snakemake.input.get("environment"))  # noqa: F821
    if environment["reason"]:
        found = ceiling.unmeasured(processor, wildcards.precision,
                                   f"the PyTorch environment it runs in: {environment['reason']}")
    else:
        wait = config["slots"]["wait_minutes"]
        found = ceiling.measure(processor, wildcards.precision, environment["python"],
                                snakemake.threads, log, slots.lock_dir(config["slots"]["directory"]),  # noqa: F821
                                None if wait is None else wait * 60)
    ceiling.write(found, Path(snakemake.output[0]))  # noqa: F821
    print(f"{found['tflops']} TFLOP/s {found['reason']}")
