"""Snakemake entry point: one measured training run, whose record is written whatever happens."""
from pathlib import Path

from dlbench import envs, monitor
from dlbench.config import config_sha256
from dlbench.jobs import logged

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    environment = envs.status(snakemake.input.get("environment"))  # noqa: F821
    params = snakemake.params  # noqa: F821
    record = monitor.run(params.spec, environment["python"], Path(snakemake.log[0]), params.timeout_s,  # noqa: F821
                         params.sample_hz, config_sha256(snakemake.config),  # noqa: F821
                         unavailable_reason=environment["reason"] or None,
                         worker_python=environment.get("worker_python"))
    monitor.write_record(record, Path(snakemake.output[0]))  # noqa: F821
    print(f"{record['status']}: {record['timing']['images_per_second_mean'] or record['reason']}")
