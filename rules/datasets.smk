"""Datasets: fetch (real) or generate (stand-in) archives, verify, unpack or index, and convert
into each framework's format (MNIST-like and CIFAR10 whole, ILSVRC12 in shards)."""


checkpoint fetch:
    """Real data: the archives downloaded (MNIST, KMNIST, CIFAR10) or the user's (ILSVRC12), all verified.
    It never fails: fetch.json says ok, or failed naming every archive that cannot be had, and the
    runs on that dataset are then recorded as failed with that reason (train_inputs). No archive is
    a rule's output, so Snakemake never deletes one; a user's file is kept whatever its checksum."""
    output:
        "data/raw/{family}/fetch.json",
    wildcard_constraints:
        family="|".join(DATASET_FAMILIES),
    # The mirrors are read from the config inside the job: editing them refetches nothing.
    params:
        archive_dir=lambda wildcards: archive_dir(wildcards.family),
    log:
        "logs/datasets/fetch-{family}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/fetch.py"


for _family in (family for family in DATASET_FAMILIES if "generated" in FAMILIES[family].modes):

    rule:
        name:
            f"generate_{_family}"
        input:
            # a stand-in generated with other sizes than these, its metadata lost, is generated again
            damaged=checked_generation(_family),
        output:
            [f"data/raw/{_family}-generated/{archive}"
             for archive in (FAMILIES[_family].archives or ilsvrc12.ARCHIVES)],
        params:
            family=_family,
            facts=generation_facts(_family),  # sizes, seed, generator: a change regenerates (a params change)
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
            archives_of(_label),
        output:
            unpacked_files(_label),
        params:
            family=_family,
        log:
            f"logs/datasets/unpack-{_label}.log",
        conda:
            "../envs/workflow.yaml"
        script:
            "../workflow/scripts/unpack.py"


rule convert:
    input:
        unpack(lambda wildcards: {"unpacked": unpacked_files(wildcards.dataset), **writer_environment(wildcards)}),
        damaged=damage_stamps("data/{dataset}/{format}"),
    output:
        directory("data/{dataset}/{format}"),
    wildcard_constraints:
        dataset=f"({'|'.join(family for family in FILE_FAMILIES if family != 'imagenet')})(-generated)?",
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
        lambda wildcards: archives_of(wildcards.dataset),
    output:
        [f"data/{{dataset}}/index/{name}" for name in ilsvrc12.INDEX_FILES],
    wildcard_constraints:
        dataset=r"imagenet(-generated)?",
    params:
        raw_dir=lambda wildcards: archive_dir(wildcards.dataset),
    log:
        "logs/datasets/index-{dataset}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/index_ilsvrc12.py"


rule select_classes:
    input:
        lambda wildcards: [f"data/{whole_dataset(wildcards.dataset)}/index/{name}" for name in ilsvrc12.INDEX_FILES],
    output:
        [f"data/{{dataset}}/index/{name}" for name in ilsvrc12.INDEX_FILES],
    wildcard_constraints:
        dataset=r"imagenet(-generated)?-[1-9][0-9]*classes(-[0-9a-f]{6})?",
    params:
        classes=lambda wildcards: CLASS_SUBSETS[wildcards.dataset],
    log:
        "logs/datasets/select-{dataset}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/select_classes.py"


rule convert_shard:
    input:
        unpack(shard_inputs),
        damaged=damage_stamps("data/{dataset}/shards/{format}/{split}-{index}-of-{shards}"),
    output:
        directory("data/{dataset}/shards/{format}/{split}-{index}-of-{shards}"),
    wildcard_constraints:
        dataset=IMAGENET_LABEL,
        format="|".join(FORMATS),
        split="train|test",
        index=r"\d{5}",
        shards=r"\d{5}",
    params:
        archive_dir=lambda wildcards: archive_dir(wildcards.dataset),
    log:
        "logs/datasets/shards/{dataset}-{format}-{split}-{index}-of-{shards}.log",
    conda:
        writer_conda
    script:
        "../workflow/scripts/convert_shard.py"


rule gather_shards:
    input:
        shards=shard_outputs,
        damaged=damage_stamps("data/{dataset}/{format}"),
    output:
        directory("data/{dataset}/{format}"),
    wildcard_constraints:
        dataset=IMAGENET_LABEL,
        format="|".join(FORMATS),
    params:
        source=lambda wildcards: archive_dir(wildcards.dataset),
    log:
        "logs/datasets/gather-{dataset}-{format}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/gather_shards.py"
