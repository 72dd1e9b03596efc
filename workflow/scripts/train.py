"""Snakemake entry point: one measured training run, whose record is written whatever happens."""
import json
from dataclasses import replace
from pathlib import Path

from dlbench import envs
from dlbench.config import config_sha256
from dlbench.hardware import slots
from dlbench.jobs.joblog import logged
from dlbench.record import provenance
from dlbench.record.io import series_path, write_record
from dlbench.run import monitor
from dlbench.spec import RunSpec

with logged(snakemake.log[0]):  # noqa: F821 - injected by Snakemake
    environment = envs.status(snakemake.input.get("environment"))  # noqa: F821
    params, config = snakemake.params, snakemake.config  # noqa: F821
    spec = RunSpec(**params.spec)
    if spec.threads != snakemake.threads:  # noqa: F821 - --set-threads: the record says what the job had
        print(f"the job has {snakemake.threads} threads (--set-threads), the config's {spec.threads}")  # noqa: F821
        spec = replace(spec, threads=snakemake.threads)  # noqa: F821
    cannot_run = None
    if why := envs.cannot_run(environment, spec.gpus):
        cannot_run = {"status": "unavailable", "reason": why}
    elif snakemake.input.get("fetch"):  # noqa: F821 - the run's real dataset could not be had
        fetch = json.loads(Path(snakemake.input.fetch).read_text())  # noqa: F821
        cannot_run = {"status": "failed", "reason": f"dataset {spec.dataset} could not be had: {fetch['reason']}"}
    wait = config["slots"]["wait_minutes"]
    record = monitor.run(spec, environment["python"], Path(snakemake.log[0]),  # noqa: F821
                         config["measurement"]["timeout_minutes"] * 60, params.sample_hz, config_sha256(config),
                         cannot_run=cannot_run,
                         worker_python=environment.get("worker_python"),
                         lock_dir=slots.lock_dir(config["slots"]["directory"]),
                         slot_wait_s=None if wait is None else wait * 60,
                         ceiling=json.loads(Path(snakemake.input.ceiling).read_text()),  # noqa: F821
                         series_at=series_path(Path(snakemake.output[0])),  # noqa: F821
                         environment=provenance.environment(snakemake.input.get("environment"), environment))  # noqa: F821
    write_record(record, Path(snakemake.output[0]))  # noqa: F821
    print(f"{record['status']}: {record['timing']['images_per_second_mean'] or record['reason']}")
