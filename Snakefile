"""dlbench: benchmark deep-learning frameworks (training speed, GPU memory, GPU power).

    snakemake --cores all                      # the default config
    snakemake --cores all --configfile config/thesis.yaml
    snakemake --report results/report.html
"""
from snakemake.utils import min_version

min_version("9.0")


configfile: "config/config.yaml"


report: "report/workflow.rst"


include: "rules/common.smk"
include: "rules/datasets.smk"
include: "rules/train.smk"
include: "rules/aggregate.smk"


# Cheap aggregation runs where Snakemake runs, not as cluster jobs; so do downloads, because a
# cluster's compute nodes often cannot reach the internet.
localrules: all, node_facts, repetitions, fetch, runs_table, timings_table, appendix_table, api_cost_table,
    accuracy_table, layers_table, thesis_table, figure, accuracy_curve, layers_figure, heatmap, thesis_figure,
    iteration_times, scaling_figure, targets_table, targets_figure, release_lines_table,
    release_lines_figure


# Before the first job: how many runs, about how long; then a line per finished run (dlbench.jobs.progress). Local
# jobs run without Snakemake's job rate limit, whose timers took a core's quarter beside the runs
# (dlbench.jobs.scheduler).
onstart:
    remember_run()
    plan.scheduler.lift_local_rate_limit(workflow)
    plan.progress.start(planned_runs(), runs_at_once())


# How many runs are ok, failed or unavailable: Snakemake's "100% done" counts jobs, and a failed
# measurement is a job that succeeded in writing its record. Then each stage's time, from Snakemake's log. The run's
# command is remembered again with the records its repetitions checkpoints added (make retry-failed).
onsuccess:
    plan.progress.stop()
    remember_run()
    print(run_summary())
    print("dlbench stages:", plan.stages.write_stages(log, rule_files(), Path("results/stages.md")))


onerror:
    plan.progress.stop()
    remember_run()
    print(run_summary())
    print("dlbench stages:", plan.stages.write_stages(log, rule_files(), Path("results/stages.md")))


rule all:
    input:
        all_runs,
        "results/tables/runs.csv",
        "results/timings.md",
        "results/tables/appendix.csv",
        "results/tables/api_cost.csv",
        "results/tables/thesis.csv",
        "results/figures/thesis.png",
        figures,
        heatmaps,
        SCALING,
        TASK_TARGETS,
        TARGETS_OVER_TARGETS,
        RELEASE_LINES,
    default_target: True
