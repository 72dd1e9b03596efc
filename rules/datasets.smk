"""Datasets: download (real) or generate (stand-in) archives, verify, unpack into data/<dataset>/."""


rule download:
    output:
        "data/raw/{family}/{archive}",
    wildcard_constraints:
        family="|".join(DOWNLOADABLE),
    params:
        mirrors=lambda wildcards: bench_config.mirrors(config, wildcards.family),
    log:
        "logs/datasets/download-{family}-{archive}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/download.py"


for _family in DOWNLOADABLE:

    rule:
        name:
            f"generate_{_family}"
        output:
            [f"data/raw/{_family}-generated/{archive}" for archive in FAMILIES[_family].archives],
        params:
            family=_family,
            sizes=config["generated"],
        log:
            f"logs/datasets/generate-{_family}.log",
        conda:
            "../envs/workflow.yaml"
        script:
            "../workflow/scripts/generate.py"


for _label, _family, _mode in FILE_DATASETS:

    rule:
        name:
            f"unpack_{_label.replace('-', '_')}"
        input:
            [f"data/raw/{_label}/{archive}" for archive in FAMILIES[_family].archives],
        output:
            unpacked_files(_label),
        params:
            family=_family,
            # Real archives are verified again here: a file copied into data/raw by hand is checked too.
            md5=FAMILIES[_family].archives if _mode == "real" else None,
        log:
            f"logs/datasets/unpack-{_label}.log",
        conda:
            "../envs/workflow.yaml"
        script:
            "../workflow/scripts/unpack.py"


rule convert:
    input:
        lambda wildcards: unpacked_files(wildcards.dataset),
    output:
        directory("data/{dataset}/{format}"),
    wildcard_constraints:
        dataset=r"[a-z0-9]+(-generated)?",
        format="|".join(FORMATS),
    params:
        unpacked="data/{dataset}",
    log:
        "logs/datasets/convert-{dataset}-{format}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/convert.py"
