"""Config validation, the benchmark matrix, and the input functions the rules share: each the plan's answer
(dlbench.plan), wrapped where Snakemake has a say (ancient, checkpoints, the job's main process)."""
import dataclasses
import functools
import sys
from pathlib import Path
from types import SimpleNamespace

from snakemake.exceptions import IncompleteCheckpointException, WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from dlbench import plan  # noqa: E402
from dlbench.plan import (CEILING, FAMILIES, FILE_FAMILIES, FORMATS, IMAGENET_LABEL, METRICS, NODE_FACTS,  # noqa: E402
                          REPETITIONS_DECISION, RUN_RECORD, WORKER_ENVIRONMENTS, caption_statistics,
                          caption_thresholds, datasets, ilsvrc12, whole_dataset)


def log_line(line):
    print(line, file=sys.stderr)


try:
    PLAN = plan.of_config(config, lambda checked: validate(checked, "../config/schema.yaml"), log_line,
                          workflow.configfiles)
except plan.INVALID as error:
    raise WorkflowError(f"invalid config: {error}")

TARGETS, CASES, CLASS_SUBSETS, HARDWARE_ORDER = PLAN.targets, PLAN.cases, PLAN.class_subsets, PLAN.hardware_order
USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
BUILD_VENVS = config["environment"] == "venv" and not USE_CONDA  # per-framework pip virtualenvs
ENVS = Path(workflow.basedir) / "envs"  # beside the Snakefile, so that --directory elsewhere finds them


def decided_runs(key):
    """A case's runs in all, where its repetitions are a target: the repetitions checkpoint's decision; the runs it
    adds join the progress lines."""
    runs = plan.files.read_json(Path(checkpoints.repetitions.get(**PLAN.wildcards(key)).output[0]))["runs"]
    if workflow.is_main_process:
        plan.progress.expect([(path, run_spec(SimpleNamespace(**PLAN.wildcards(key), repetition=repetition)))
                              for repetition, path in enumerate(PLAN.records([key], {key: runs}.get), 1)
                              if repetition > PLAN.repetitions.min])
    return runs


def runs(keys=None):
    """The records of the cases ``keys`` (all by default), with those the repetitions checkpoints add. Every
    undecided case's decision is awaited at once (a checkpoint's get raises for one), so that their first runs go
    on side by side."""
    decided, undecided = {}, []
    for key in (CASES if keys is None else keys):
        if PLAN.adapts(key):
            try:
                decided[key] = decided_runs(key)
            except IncompleteCheckpointException as incomplete:
                undecided.append(incomplete.targetfile)
    if undecided:
        raise IncompleteCheckpointException(checkpoints.repetitions.rule, undecided)
    return PLAN.records(keys, decided.get)


def all_runs(wildcards):
    return runs()


def decided_on_disk(key):
    """After the run: a case's runs in all where its repetitions decision was written, else None."""
    path = Path(REPETITIONS_DECISION.format(**PLAN.wildcards(key)))
    return plan.files.read_json(path)["runs"] if path.exists() else None


def run_summary():
    return PLAN.run_summary(decided_on_disk, log_line)


def remember_run():
    """This run's command and its config's records, for make retry-failed (dlbench.jobs.retry)."""
    plan.retry.remember(plan.retry.LAST_RUN, sys.argv, sys.executable, Path.cwd(),
                        PLAN.records(decided=decided_on_disk))


def menu_label(wildcards, before=""):
    """A figure's entry in the report's menu: its metric in words with the unit, not the metric's key."""
    return {"metric": f"{before}{wildcards.metric.replace('_', ' ')} ({METRICS[wildcards.metric].unit})"}


# Which node this is, from files alone (dlbench.hardware.node): a changed node measures its ceilings and facts
# again.
NODE = plan.node.identity()


def node_facts():
    """What decides the figures drawn: the node_facts job's measurement (the merged records' with merge)."""
    if PLAN.merged:
        return PLAN.node_facts(None)
    measured = checkpoints.node_facts.get(node=plan.node.key(NODE)).output[0]
    return PLAN.node_facts(plan.files.read_json(Path(measured)))


def figures(wildcards):
    return PLAN.figures(node_facts())


def heatmaps(wildcards):
    return PLAN.heatmaps(node_facts())


SCALING, TASK_TARGETS, TARGETS_OVER_TARGETS = PLAN.scaling(), PLAN.task_targets(), PLAN.targets_over_targets()
RELEASE_LINES = PLAN.release_lines()
PROFILE_RUNS = PLAN.records(key for key in CASES if key[5] == "profile")
# Every family with files is fetched when real (downloaded, or ILSVRC12 the user's) and can be generated.
DATASET_FAMILIES = list(FILE_FAMILIES)
# Datasets read from files: (label, family, mode) for every non-synthetic case. MNIST-like and
# CIFAR10 datasets are unpacked and converted whole; ILSVRC12 is indexed and converted in shards.
UNPACKED_DATASETS = [(label, family, mode) for label, family, mode in PLAN.file_datasets() if family != "imagenet"]

wildcard_constraints:
    **plan.WILDCARDS,


def case(wildcards):
    return PLAN.case_of(wildcards)


unpacked_files = plan.unpacked_files


def requirements(wildcards):
    return plan.requirements(ENVS, plan.venv_of(wildcards.venv)[1])


# With --use-conda, Snakemake creates the environments before any job, here: their CUDA variants where the
# NVIDIA driver lists GPUs on this node (on a cluster, run it from a GPU node for CUDA builds).
CONDA_GPUS = NODE["gpus"] if USE_CONDA else []


def conda_file(environment):
    return plan.conda_file(ENVS, environment, CONDA_GPUS)


def env_build_threads(wildcards):
    return plan.build_threads(plan.venv_of(wildcards.venv)[1], workflow.cores)


def venv_target(wildcards):
    return plan.venv_of(wildcards.venv)[0]


def venv_gpus(wildcards):
    """A GPU target's environment is built holding a GPU: on a Slurm node, nvidia-smi sees only the job's GPUs."""
    return int(PLAN.uses_gpus(venv_target(wildcards)))


def judge():
    """Which process judges records and data as the DAG is built, and where it writes its stamps: a run that executes
    jobs in results/ and data/, a dry run (or --summary, --report) in .snakemake/ (dlbench.plan.Judge). Asked as the
    DAG is built, not as this file is read: Snakemake names its executor, and so whether this is a dry run, only
    then."""
    return plan.judge(workflow.is_main_process, writes=workflow.executor_plugin is not None and not workflow.dryrun)


@functools.cache
def checked_conversion(format_dir):
    """Only the main Snakemake process judges a conversion: a cluster job's own Snakemake must not."""
    return plan.checked_conversion(format_dir, judge(), log_line)


def generation_facts(family):
    """What a generated stand-in of ``family`` is generated with (its sizes and seed, the generator)."""
    sizes = ({**config["generated"]["imagenet"], "seed": config["generated"]["seed"]} if family == "imagenet"
             else config["generated"])
    return plan.generation_facts(sizes, datasets.GENERATOR)


def checked_generation(family):
    """Only the main Snakemake process judges a generated stand-in: a cluster job's own Snakemake must not."""
    return lambda wildcards: plan.checked_generation(f"data/raw/{family}-generated", generation_facts(family),
                                                     judge(), log_line)


def damage_stamps(output):
    """A conversion job's damage stamps, its conversion judged first: a target of the data alone (snakemake
    data/<dataset>/<format>), which no run's input judges, converts damaged data again too."""
    def stamps(wildcards):
        made = output.format(**wildcards)
        checked_conversion(plan.conversion_of(made))
        return plan.damage_stamps(made)
    return stamps


def writer_environment(wildcards):
    """The framework venv a format's writer runs in (RecordIO: MXNet's), when the workflow builds venvs."""
    framework = plan.writer_environment(wildcards.format)
    return {"environment": plan.venv_status(framework)} if framework and BUILD_VENVS else {}


def writer_conda(wildcards):
    framework = plan.writer_environment(wildcards.format)
    return conda_file(framework) if framework else "../envs/workflow.yaml"


archive_dir = PLAN.archive_dir
fetch_status = plan.fetch_status


def archives_of(label):
    """What unpacking or indexing a dataset waits for: the generate rule's archives, or for real data
    the fetch status (ancient: fetching again, with the archives already there, redoes nothing)."""
    family, mode = plan.parse_dataset_label(label)
    return [ancient(fetch_status(family))] if mode == "real" else plan.generated_archives(label)


def shard_inputs(wildcards):
    return {"index": [f"data/{wildcards.dataset}/index/{name}" for name in ilsvrc12.INDEX_FILES],
            "archives": PLAN.ilsvrc12_archives(wildcards.dataset), **writer_environment(wildcards)}


def shard_outputs(wildcards):
    return PLAN.shard_outputs(wildcards.dataset, wildcards.format)


def failed_fetch(run):
    """The fetch status of the run's real dataset if its archives could not be had, else None."""
    if run.data_mode != "real":
        return None
    status = checkpoints.fetch.get(family=run.family).output[0]
    return status if plan.fetch_failed(status) else None


def train_inputs(wildcards):
    run = case(wildcards)
    inputs = {}
    fetch = failed_fetch(run)
    if fetch:  # the run is recorded as failed with the fetch's reason
        inputs["fetch"] = ancient(fetch)
    elif plan.data_input(run):
        inputs["data"] = checked_conversion(plan.data_input(run))
    if BUILD_VENVS:
        inputs["environment"] = plan.venv_status(plan.ENVIRONMENTS[run.framework], run.hardware)
    elif USE_CONDA and plan.worker_status(run.framework):
        inputs["environment"] = plan.worker_status(run.framework)
    # Whether the record is what the config and the code ask now, from the record itself (dlbench.record.currency)
    inputs["current"] = plan.record_current(RUN_RECORD.format(**wildcards), run_spec(wildcards),
                                            judge(), log_line)
    # Ancient: a ceiling measured again (a new driver) does not redo the runs measured before it.
    inputs["ceiling"] = ancient(plan.ceiling_of(run))
    return inputs


def ceiling_inputs(wildcards):
    """The matrix product runs in PyTorch's environment: the venv where the workflow builds them."""
    return {"environment": plan.venv_status("pytorch", ceiling_target(wildcards))} if BUILD_VENVS else {}


def ceiling_threads(wildcards):
    """A CPU run's cores, or a GPU run's, on the ceiling's target: those a run on the device is measured with."""
    hardware, device = plan.ceiling_device(wildcards.processor)
    return threads_for(device, hardware)


def ceiling_on_gpu(wildcards):
    return plan.gpu_count(plan.ceiling_device(wildcards.processor)[1])


def ceiling_target(wildcards):
    return plan.ceiling_device(wildcards.processor)[0]


def slurm_options(target_of, gpus_of):
    """The Slurm resources of a job's hardware target (``target_of(wildcards)``: its name) that the config sets,
    as rule resources (dlbench.plan.Plan.slurm_resource)."""
    return {plan.SLURM_RESOURCES[key]: (lambda wildcards, key=key: PLAN.slurm_resource(
        target_of(wildcards), key, bool(gpus_of(wildcards)))) for key in PLAN.slurm_keys()}


def train_conda(wildcards):
    environment = plan.train_conda_environment(wildcards.framework)
    return conda_file(environment) if environment else "../envs/workflow.yaml"


def train_threads(wildcards):
    run = case(wildcards)
    return threads_for(run.device, run.hardware)


def train_gpus(wildcards):
    return plan.gpu_count(case(wildcards).device)


def train_geometry():
    """A run over nodes asks Slurm for them (dlbench.run.launch.slurm_resources), as a resource per key."""
    return {key: (lambda wildcards, key=key: plan.launch.slurm_resources(case(wildcards).device)[key])
            for key in plan.launch.slurm_resources("cpu")}


def train_target(wildcards):
    return case(wildcards).hardware


def thread_caps():
    """What Snakemake caps a rule's threads by: --max-threads and --cores, where given (a cluster executor's main
    process is given no cores)."""
    try:
        cores = workflow.cores
    except WorkflowError:
        cores = None
    return [cap for cap in (workflow.resource_settings.max_threads, cores) if cap]


def threads_for(device, hardware=None):
    return PLAN.threads(device, hardware, thread_caps())


def run_spec(wildcards):
    """The run's spec as plain data, a params value of the wildcards alone (dlbench.plan.Plan.run_spec)."""
    run = case(wildcards)
    return PLAN.run_spec(plan.case_key(run), int(wildcards.repetition), thread_caps(), plan.data_input(run))


# What the runs' framework is where Snakemake sees no file of it (environment: current): the interpreter and
# its installed distributions, a params value of every run. A built environment is the run's input (a venv's
# status file, rebuilt with its requirements) or Snakemake's own (a conda environment's hash).
CURRENT_ENVIRONMENT = None if BUILD_VENVS or USE_CONDA else plan.current_environment()


def rule_files():
    """Each rule's rules file (dlbench.jobs.stages names a job's stage by it)."""
    return {rule.name: rule.snakefile for rule in workflow.rules}


def planned_runs():
    """The runs this invocation will make (the train jobs Snakemake has to run): record path and spec."""
    return [(job.output[0], job.params.spec) for job in workflow.dag.needrun_jobs() if job.rule.name == "train"]


def runs_at_once():
    """How many runs go on at a time: the cluster's job limit, else the cores over a run's threads."""
    if not workflow.local_exec:
        return workflow.nodes
    threads = [job.threads for job in workflow.dag.needrun_jobs() if job.rule.name == "train"]
    return max(1, workflow.cores // max(threads, default=1))


def cell_records(wildcards):
    return runs(PLAN.cases_of(wildcards.dataset, wildcards.network))


def train_records(wildcards):
    return runs(PLAN.cases_of(wildcards.dataset, wildcards.network, ("train",)))


def first_runs(wildcards):
    """A case's first runs, which its repetitions decision is planned from."""
    return PLAN.records([plan.case_key(case(wildcards))])


def accuracy_records(wildcards):
    return PLAN.records_of(wildcards.dataset, wildcards.network, ("accuracy",))


def profile_records(wildcards):
    return PLAN.records_of(wildcards.dataset, wildcards.network, ("profile",))
