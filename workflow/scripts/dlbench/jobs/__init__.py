"""The workflow's jobs as Snakemake runs them: their logs, the progress, stages and summary of a workflow run."""
