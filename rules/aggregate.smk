"""Tables and figures from the run records (read only, never rewritten)."""


rule runs_table:
    input:
        RUNS,
    output:
        report("results/tables/runs.csv", caption="../report/runs.rst", category="Tables",
               labels={"table": "every run"}),
    log:
        "logs/aggregate/runs_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/runs_table.py"


rule appendix_table:
    input:
        "results/tables/runs.csv",
    output:
        csv="results/tables/appendix.csv",
        md=report("results/tables/appendix.md", caption="../report/appendix.rst", category="Tables",
                  labels={"table": "appendix"}),
        tex="results/tables/appendix.tex",
    log:
        "logs/aggregate/appendix_table.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/appendix_table.py"


rule figure:
    input:
        cell_records,
    output:
        png=report(
            "results/figures/{dataset}/{network}/{metric}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory="{dataset} / {network}",
            labels={"metric": "{metric}"},
        ),
        svg="results/figures/{dataset}/{network}/{metric}.svg",
    wildcard_constraints:
        metric="|".join(METRICS),
    params:
        meaning=lambda wildcards: METRICS[wildcards.metric].meaning,  # for the caption
    log:
        "logs/aggregate/figure-{dataset}-{network}-{metric}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/figure.py"
