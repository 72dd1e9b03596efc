"""Tables and figures from the run records (read only, never rewritten): the records become runs.csv, runs.csv
the appendix, and every other table and figure takes its numbers from the appendix (a cell's bar figures from
its own records, by the same functions, so that one figure rebuilt waits for no other run; a record's own
series, its every step's time, accuracy curve and layers, from the records)."""


rule runs_table:
    input:
        all_runs,
    output:
        report("results/tables/runs.csv", caption="../report/runs.rst", category="Tables",
               labels={"table": "every run"}),
    log:
        "logs/aggregate/runs_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/runs_table.py"


rule timings_table:
    input:
        all_runs,
    output:
        csv="results/timings.csv",
        md=report("results/timings.md", caption="../report/timings.rst", category="Tables",
                  labels={"table": "where the time went"}),
    log:
        "logs/aggregate/timings_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/timings_table.py"


rule appendix_table:
    input:
        "results/tables/runs.csv",
    output:
        csv="results/tables/appendix.csv",
        md=report("results/tables/appendix.md", caption="../report/appendix.rst", category="Tables",
                  labels={"table": "appendix"}),
        tex="results/tables/appendix.tex",
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        thresholds=caption_thresholds(),  # for the caption
        hardware=HARDWARE_ORDER,  # the columns' and panels' order of targets
    log:
        "logs/aggregate/appendix_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/appendix_table.py"


rule api_cost_table:
    input:
        appendix="results/tables/appendix.csv",
        runs="results/tables/runs.csv",  # each run's batch: milliseconds per step
    output:
        csv="results/tables/api_cost.csv",
        md=report("results/tables/api_cost.md", caption="../report/api_cost.rst", category="Tables",
                  labels={"table": "API cost"}),
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
    log:
        "logs/aggregate/api_cost_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/api_cost_table.py"


rule thesis_table:
    input:
        appendix="results/tables/appendix.csv",
        runs="results/tables/runs.csv",
    output:
        csv="results/tables/thesis.csv",
        ranks="results/tables/thesis_ranks.csv",
        md=report("results/tables/thesis.md", caption="../report/thesis.rst", category="Tables",
                  labels={"table": "beside the thesis"}),
        appendix_a=report("results/tables/appendix_a.md", caption="../report/appendix_a.rst", category="Tables",
                          labels={"table": "Appendix A, ours beside it"}),
    log:
        "logs/aggregate/thesis_table.log",
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        thesis_gpus={name: target["thesis"] for name, target in TARGETS.items() if target.get("thesis")},
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/thesis_table.py"


rule thesis_figure:
    input:
        "results/tables/thesis.csv",
    output:
        png=report("results/figures/thesis.png", caption="../report/thesis_figure.rst", category="Figures",
                   subcategory="beside the thesis", labels={"figure": "ours vs the thesis"}),
        svg="results/figures/thesis.svg",
    log:
        "logs/aggregate/thesis_figure.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/thesis_figure.py"


rule heatmap:
    input:
        "results/tables/appendix.csv",
    output:
        png=report("results/figures/{dataset}/{metric}_heatmap.png", caption="../report/heatmap.rst",
                   category="Figures", subcategory="{dataset}",
                   labels=lambda wildcards: menu_label(wildcards, "which framework: ")),
        svg="results/figures/{dataset}/{metric}_heatmap.svg",
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        hardware=HARDWARE_ORDER,  # the columns' and panels' order of targets
    log:
        "logs/aggregate/heatmap-{dataset}-{metric}.log",
    wildcard_constraints:
        metric="|".join(metric for metric, definition in METRICS.items() if definition.best),
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/heatmap.py"


rule scaling_figure:
    input:
        "results/tables/appendix.csv",
    output:
        png=report("results/figures/{dataset}/scaling.png", caption="../report/scaling.rst", category="Figures",
                   subcategory="{dataset}", labels={"metric": "speed-up: several devices, GPU over CPU"}),
        svg="results/figures/{dataset}/scaling.svg",
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        hardware=HARDWARE_ORDER,  # the columns' and panels' order of targets
    log:
        "logs/aggregate/scaling-{dataset}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/scaling_figure.py"


rule release_lines_table:
    input:
        appendix="results/tables/appendix.csv",
        runs="results/tables/runs.csv",  # each framework's exact version
    output:
        points=plan.RELEASE_POINTS,
        csv=plan.RELEASE_LINES,
        md=report(plan.REGRESSIONS, caption="../report/regressions.rst", category="Tables",
                  labels={"table": "steps along the release lines"}),
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
    log:
        "logs/aggregate/release_lines_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/release_lines_table.py"


rule release_lines_figure:
    input:
        points=plan.RELEASE_POINTS,
        thesis="results/tables/thesis.csv",  # the thesis's value of each cell it has
    output:
        png=report("results/figures/release_lines.png", caption="../report/release_lines_figure.rst",
                   category="Figures", labels={"figure": "release lines"}),
        svg="results/figures/release_lines.svg",
    log:
        "logs/aggregate/release_lines_figure.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/release_lines_figure.py"


rule targets_table:
    input:
        "results/tables/appendix.csv",
    output:
        csv="results/tables/targets.csv",
        md=report("results/tables/targets.md", caption="../report/targets.rst", category="Tables",
                  labels={"table": "one target over another"}),
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        pairs=PLAN.target_pairs,
    log:
        "logs/aggregate/targets_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/targets_table.py"


rule targets_figure:
    input:
        "results/tables/targets.csv",
    output:
        png=report("results/figures/targets.png", caption="../report/targets_figure.rst", category="Figures",
                   subcategory="one target over another", labels={"figure": "speed-up of one target over another"}),
        svg="results/figures/targets.svg",
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
    log:
        "logs/aggregate/targets_figure.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/targets_figure.py"


rule iteration_times:
    input:
        train_records,
    output:
        png=report("results/figures/{dataset}/{network}/iteration_times.png", caption="../report/iteration_times.rst",
                   category="Figures", subcategory="{dataset} / {network}", labels={"metric": "every step's time"}),
        svg="results/figures/{dataset}/{network}/iteration_times.svg",
    params:
        hardware=HARDWARE_ORDER,  # the columns' and panels' order of targets
    log:
        "logs/aggregate/iteration_times-{dataset}-{network}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/iteration_times.py"


rule accuracy_table:
    input:
        runs="results/tables/runs.csv",
        appendix="results/tables/appendix.csv",
    output:
        csv="results/tables/accuracy.csv",
        md=report("results/tables/accuracy.md", caption="../report/accuracy.rst", category="Tables",
                  labels={"table": "accuracy"}),
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        hardware=HARDWARE_ORDER,  # the order of targets in seed 003's layout
    log:
        "logs/aggregate/accuracy_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/accuracy_table.py"


rule accuracy_curve:
    input:
        accuracy_records,
    output:
        png=report(
            "results/figures/{dataset}/{network}/accuracy_curve.png",
            caption="../report/accuracy_curve.rst",
            category="Figures",
            subcategory="{dataset} / {network}",
            labels={"metric": "accuracy over time"},
        ),
        svg="results/figures/{dataset}/{network}/accuracy_curve.svg",
    log:
        "logs/aggregate/accuracy_curve-{dataset}-{network}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/accuracy_curve.py"


rule layers_table:
    input:
        records=PROFILE_RUNS,
        appendix="results/tables/appendix.csv",
    output:
        csv="results/tables/layers.csv",
        md=report("results/tables/layers.md", caption="../report/layers.rst", category="Tables",
                  labels={"table": "layers"}),
    log:
        "logs/aggregate/layers_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/layers_table.py"


rule layers_figure:
    input:
        profile_records,
    output:
        png=report(
            "results/figures/{dataset}/{network}/layers.png",
            caption="../report/layers_figure.rst",
            category="Figures",
            subcategory="{dataset} / {network}",
            labels={"metric": "time per layer"},
        ),
        svg="results/figures/{dataset}/{network}/layers.svg",
    log:
        "logs/aggregate/layers_figure-{dataset}-{network}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/layers_figure.py"


rule layer_steps_figure:
    """Seed 004's figures from the series kept beside the profile records (written by the same jobs)."""
    input:
        profile_records,
    output:
        png=report(
            "results/figures/{dataset}/{network}/layer_steps.png",
            caption="../report/layer_steps.rst",
            category="Figures",
            subcategory="{dataset} / {network}",
            labels={"metric": "every profiled step"},
        ),
        svg="results/figures/{dataset}/{network}/layer_steps.svg",
        phases_png=report(
            "results/figures/{dataset}/{network}/layer_phases.png",
            caption="../report/layer_phases.rst",
            category="Figures",
            subcategory="{dataset} / {network}",
            labels={"metric": "every profiled step, forward and backward"},
        ),
        phases_svg="results/figures/{dataset}/{network}/layer_phases.svg",
    log:
        "logs/aggregate/layer_steps_figure-{dataset}-{network}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/layer_steps_figure.py"


rule figure:
    input:
        cell_records,
    output:
        png=report(
            "results/figures/{dataset}/{network}/{metric}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory="{dataset} / {network}",
            labels=menu_label,
        ),
        svg="results/figures/{dataset}/{network}/{metric}.svg",
    wildcard_constraints:
        metric="|".join(METRICS),
    params:
        statistics=caption_statistics(config["statistics"]),  # how cells are compared (docs/statistics.md)
        meaning=lambda wildcards: METRICS[wildcards.metric].meaning,  # for the caption
        thresholds=caption_thresholds(),
        hardware=HARDWARE_ORDER,  # the columns' and panels' order of targets
    log:
        "logs/aggregate/figure-{dataset}-{network}-{metric}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/figure.py"
