"""The workflow end to end: Snakemake runs, interrupted runs, Slurm (marked slow where they take minutes)."""
