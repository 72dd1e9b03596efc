"""Datasets: download (real) or generate (stand-in) archives, verify, unpack or index, and
convert into each framework's format (MNIST-like and CIFAR10 whole, ILSVRC12 in shards)."""


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


for _family in GENERATABLE:

    rule:
        name:
            f"generate_{_family}"
        output:
            [f"data/raw/{_family}-generated/{archive}"
             for archive in (FAMILIES[_family].archives or ilsvrc12.ARCHIVES)],
        params:
            family=_family,
            sizes=({**config["generated"]["imagenet"], "seed": config["generated"]["seed"]}
                   if _family == "imagenet" else config["generated"]),
        log:
            f"logs/datasets/generate-{_family}.log",
        conda:
            "../envs/workflow.yaml"
        script:
            "../workflow/scripts/generate.py"


for _label, _family, _mode in UNPACKED_DATASETS:

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
        unpack(lambda wildcards: {"unpacked": unpacked_files(wildcards.dataset), **writer_environment(wildcards)}),
    output:
        directory("data/{dataset}/{format}"),
    wildcard_constraints:
        dataset=f"({'|'.join(family for family in FAMILIES if family != 'imagenet')})(-generated)?",
        format="|".join(FORMATS),
    params:
        unpacked="data/{dataset}",
    log:
        "logs/datasets/convert-{dataset}-{format}.log",
    conda:
        writer_conda
    script:
        "../workflow/scripts/convert.py"


rule index_ilsvrc12:
    input:
        ilsvrc12_archives,
    output:
        [f"data/{{dataset}}/index/{name}" for name in ilsvrc12.INDEX_FILES],
    wildcard_constraints:
        dataset=r"imagenet(-generated)?",
    params:
        # The user's archives are checked against the published sums before anything reads them.
        md5=lambda wildcards: ilsvrc12.ARCHIVES if wildcards.dataset == "imagenet" else None,
    log:
        "logs/datasets/index-{dataset}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/index_ilsvrc12.py"


rule convert_shard:
    input:
        unpack(shard_inputs),
    output:
        directory("data/{dataset}/shards/{format}/{split}-{index}-of-{shards}"),
    wildcard_constraints:
        dataset=r"imagenet(-generated)?",
        format="|".join(FORMATS),
        split="train|test",
        index=r"\d{5}",
        shards=r"\d{5}",
    params:
        archive_dir=lambda wildcards: ilsvrc12_archive_dir(wildcards.dataset),
    log:
        "logs/datasets/shards/{dataset}-{format}-{split}-{index}-of-{shards}.log",
    conda:
        writer_conda
    script:
        "../workflow/scripts/convert_shard.py"


rule gather_shards:
    input:
        shard_outputs,
    output:
        directory("data/{dataset}/{format}"),
    wildcard_constraints:
        dataset=r"imagenet(-generated)?",
        format="|".join(FORMATS),
    params:
        source=lambda wildcards: ilsvrc12_archive_dir(wildcards.dataset),
    log:
        "logs/datasets/gather-{dataset}-{format}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/gather_shards.py"
