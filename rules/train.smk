"""Framework environments and the training runs: one job and one immutable record per run."""


rule framework_venv:
    """A framework's environment, for a hardware target where the config names them (p100@pytorch): built on a
    node of the target, whose driver and GPUs choose the build (dlbench.envs.choose_requirements)."""
    input:
        requirements,
    output:
        ".venvs/{venv}/environment.json",
    log:
        "logs/envs/{venv}.log",
    threads: env_build_threads
    resources:
        gpu=venv_gpus,
        **slurm_options(venv_target, venv_gpus),
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/build_env.py"


rule worker_conda_environment:
    """With --use-conda: the CPython 3.6 environment of a framework that runs in a worker (CNTK 2.7, the thesis's
    CNTK 2.5.1 and MXNet 1.2.0), whose interpreter runs the worker."""
    output:
        ".conda-workers/{worker}/environment.json",
    log:
        "logs/envs/{worker}-conda.log",
    params:
        worker=lambda wildcards: Path(workflow.basedir) / "workflow" / "scripts" / "workers" / WORKER_ENVIRONMENTS[
            wildcards.worker],
    wildcard_constraints:
        worker="|".join(WORKER_ENVIRONMENTS),
    conda:
        lambda wildcards: conda_file(wildcards.worker)
    shell:
        "python {params.worker:q} --environment {output:q} > {log:q} 2>&1"


checkpoint node_facts:
    """What this node can measure (RAPL counters, its CPU's peak, GPUs): which figures the runs can fill."""
    output:
        NODE_FACTS,
    log:
        "logs/nodes/{node}.log",
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/node_facts.py"


checkpoint repetitions:
    """With repetitions as a target: from a train or inference case's first runs, how many it makes in all
    (dlbench.repetitions)."""
    input:
        first_runs,
    output:
        REPETITIONS_DECISION,
    log:
        "logs/repetitions/{framework}/{dataset}/{network}/{placement}/{variant}/{task}.log",
    params:
        target=dataclasses.asdict(PLAN.repetitions),  # a changed target decides again
        contended=config["statistics"]["contended"],
    conda:
        "../envs/workflow.yaml"
    script:
        "../workflow/scripts/plan_repetitions.py"


rule ceiling:
    """Once per node (its identity: dlbench.hardware.node) and precision: the best dense-product rate of one device,
    which ceiling_fraction divides by."""
    input:
        unpack(ceiling_inputs),
    output:
        CEILING,
    log:
        "logs/ceilings/{processor}-{precision}.log",
    params:
        node=NODE,
    threads: ceiling_threads
    resources:
        gpu=ceiling_on_gpu,
        runtime=10,
        **slurm_options(ceiling_target, ceiling_on_gpu),
    conda:
        conda_file("pytorch")
    script:
        "../workflow/scripts/ceiling.py"


rule train:
    input:
        unpack(train_inputs),
    output:
        RUN_RECORD,
    log:
        RUN_RECORD.removesuffix(".json") + ".log",
    # Params are what is measured: a change reruns the run (a params value of the wildcards alone, plain data:
    # Snakemake's params trigger compares no other). The timeout and the slot settings (how long to wait,
    # where the locks are) change no measurement; train.py reads them from the config.
    params:
        spec=run_spec,
        sample_hz=config["measurement"]["sample_hz"],
        environment=CURRENT_ENVIRONMENT,
    threads: train_threads
    resources:
        gpu=train_gpus,
        runtime=config["measurement"]["timeout_minutes"] + 5,
        **slurm_options(train_target, train_gpus),
        **train_geometry(),
    conda:
        train_conda
    script:
        "../workflow/scripts/train.py"
