"""Snakemake entry point: from a case's first runs, how many it makes in all (dlbench.repetitions.decide); the
decision goes to its log and, one line, to the terminal, where the run's progress is."""
from pathlib import Path

from dlbench import files, repetitions
from dlbench.jobs.joblog import logged
from dlbench.record.io import load_records

params, wildcards = snakemake.params, snakemake.wildcards  # noqa: F821 - injected by Snakemake
with logged(snakemake.log[0]):  # noqa: F821
    decision = repetitions.decide(load_records(snakemake.input), wildcards.task,  # noqa: F821
                                  repetitions.Target(**params.target), params.contended)
    files.write_json(Path(snakemake.output[0]), decision, indent=1)  # noqa: F821
    print(decision)
print(f"dlbench repetitions of {' '.join(wildcards)}: {decision['why']}", flush=True)
