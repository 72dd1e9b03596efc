"""Config validation, the benchmark matrix, and the input functions the rules share."""
import functools
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from dlbench import config as dlbench_config  # noqa: E402
from dlbench.metrics import METRICS, caption_thresholds  # noqa: E402
from dlbench.registry import ENVIRONMENTS, FRAMEWORKS  # noqa: E402
from dlbench import (currency, datasets, files, formats, ilsvrc12, launch, merge, node, plan, progress,  # noqa: E402
                     scheduler, stages, summary)
from dlbench.compute import processor  # noqa: E402
from dlbench.datasets import FAMILIES, FILE_FAMILIES  # noqa: E402
from dlbench.envs import (OLDER_GPU_BUILDS, SOURCE_BUILDS, WORKER_PYTHONS, choose_requirements,  # noqa: E402
                          cuda_variant, current_environment)
from dlbench.formats import FRAMEWORK_FORMATS, MODULES as FORMATS, WRITER_ENVIRONMENTS, shard_name  # noqa: E402
from dlbench.plan import CEILING, RUN_RECORD  # noqa: E402
from dlbench.spec import (HARDWARE_NAME, IMAGENET_LABEL, PRECISIONS, VARIANT, RunSpec, gpu_count,  # noqa: E402
                          parse_dataset_label, parse_placement, placement_label, whole_dataset)
from dlbench.tasks import TASKS  # noqa: E402


try:
    dlbench_config.check_size(config)
    dlbench_config.check_devices(config)
    validate(config, "../config/schema.yaml")
    # With merge, the records of other workflow runs are the matrix (dlbench.merge); nothing runs
    PLAN = plan.Plan(config, merge.merged_records(config["merge"], log=lambda line: print(line, file=sys.stderr))
                     if config.get("merge") else None)
except (dlbench_config.ConfigError, merge.MergeError) as error:
    raise WorkflowError(f"invalid config: {error}")

TARGETS, CASES, CLASS_SUBSETS, HARDWARE_ORDER = PLAN.targets, PLAN.cases, PLAN.class_subsets, PLAN.hardware_order
USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
BUILD_VENVS = config["environment"] == "venv" and not USE_CONDA  # per-framework pip virtualenvs
RUNS = PLAN.records()


def menu_label(wildcards, before=""):
    """A figure's entry in the report's menu: its metric in words with the unit, not the metric's key."""
    return {"metric": f"{before}{wildcards.metric.replace('_', ' ')} ({METRICS[wildcards.metric].unit})"}


# Which node this is, from files alone (dlbench.node): a changed node measures its ceilings and its facts again.
NODE = node.identity()
NODE_FACTS = "results/nodes/{node}.json"


def node_facts():
    """What decides the figures drawn: the node_facts job's measurement (the merged records' with merge)."""
    if PLAN.merged:
        return PLAN.node_facts(None)
    return PLAN.node_facts(files.read_json(Path(checkpoints.node_facts.get(node=node.key(NODE)).output[0])))


def figures(wildcards):
    return PLAN.figures(node_facts())


def heatmaps(wildcards):
    return PLAN.heatmaps(node_facts())


SCALING, ITERATION_FIGURES, ACCURACY, PROFILE = PLAN.scaling(), PLAN.iteration_figures(), PLAN.accuracy(), PLAN.profile()
PROFILE_RUNS = PLAN.records(key for key in CASES if key[5] == "profile")
# Every family with files is fetched when real (downloaded, or ILSVRC12 the user's) and can be generated.
DATASET_FAMILIES = list(FILE_FAMILIES)
# Datasets read from files: (label, family, mode) for every non-synthetic case. MNIST-like and
# CIFAR10 datasets are unpacked and converted whole; ILSVRC12 is indexed and converted in shards.
UNPACKED_DATASETS = [(label, family, mode) for label, family, mode in PLAN.file_datasets() if family != "imagenet"]

wildcard_constraints:
    framework="|".join(FRAMEWORKS),
    environment="|".join(sorted(set(ENVIRONMENTS.values()))),
    placement=rf"({HARDWARE_NAME.pattern}@)?(\d+x)?(cpu|gpu\d+)",
    variant=VARIANT,
    repetition=r"\d+",
    task="|".join(TASKS),
    processor=rf"({HARDWARE_NAME.pattern}@)?(cpu|gpu)",
    precision="|".join(PRECISIONS),


def case(wildcards):
    return CASES[(wildcards.framework, wildcards.dataset, wildcards.network, wildcards.placement, wildcards.variant,
                  wildcards.task)]


def unpacked_files(label):
    family, _ = parse_dataset_label(label)
    return [f"data/{label}/{name}" for name in FAMILIES[family].unpacked]


def requirements(wildcards):
    """The environment's requirements, and their CUDA variant where it has one (the build job picks:
    dlbench.envs.choose_requirements). Beside the Snakefile, so that --directory elsewhere finds them."""
    cpu = Path(workflow.basedir) / "envs" / f"{wildcards.environment}.requirements.txt"
    older = [cpu.with_name(name) for _, _, name in OLDER_GPU_BUILDS.get(wildcards.environment, ())]
    return [cpu, *filter(Path.exists, [cuda_variant(cpu)]), *older]


# With --use-conda, Snakemake creates the environments before any job, here: their CUDA variants where the
# NVIDIA driver lists GPUs on this node (on a cluster, run it from a GPU node for CUDA builds).
CONDA_GPUS = NODE["gpus"] if USE_CONDA else []


def conda_file(environment):
    chosen, _ = choose_requirements(Path(workflow.basedir) / "envs" / f"{environment}.yaml", CONDA_GPUS)
    return f"../envs/{chosen.name}"


def env_build_threads(wildcards):
    """Compiling a framework (Caffe: about 4 minutes on 2 cores) uses every core; pip installs take one."""
    return workflow.cores if wildcards.environment in SOURCE_BUILDS else 1


def data_input(run):
    """The dataset in the run's framework's own format, or None (synthetic data)."""
    if run.data_mode == "synthetic":
        return None
    return f"data/{run.dataset}/{FRAMEWORK_FORMATS[run.framework]}"


@functools.cache
def reconverted_if_damaged(format_dir):
    """A damaged conversion is set aside to be converted again (formats.set_aside_if_damaged). Only the main
    Snakemake process acts: a cluster job's own Snakemake must not move its inputs."""
    if workflow.is_main_process and Path(format_dir).exists():
        said = formats.set_aside_if_damaged(Path(format_dir), dry_run=workflow.dryrun)
        if said:
            print(f"dlbench: {said}", file=sys.stderr)
    return format_dir


def writer_environment(wildcards):
    """The framework venv a format's writer runs in (RecordIO: MXNet's), when the workflow builds venvs."""
    framework = WRITER_ENVIRONMENTS.get(wildcards.format)
    if framework and BUILD_VENVS:
        return {"environment": f".venvs/{framework}/environment.json"}
    return {}


def writer_conda(wildcards):
    framework = WRITER_ENVIRONMENTS.get(wildcards.format)
    return conda_file(framework) if framework else "../envs/workflow.yaml"


def archive_dir(label):
    """Where a dataset's archives are: the user's ILSVRC12 directory, else data/raw/<label> (a class subset's:
    its whole dataset's)."""
    label = whole_dataset(label)
    return config["ilsvrc12"]["directory"] if label == "imagenet" else f"data/raw/{label}"


def fetch_status(family):
    return f"data/raw/{family}/fetch.json"


def archives_of(label):
    """What unpacking or indexing a dataset waits for: the generate rule's archives, or for real data
    the fetch status (ancient: fetching again, with the archives already there, redoes nothing)."""
    family, mode = parse_dataset_label(label)
    if mode == "real":
        return [ancient(fetch_status(family))]
    return [f"data/raw/{label}/{name}" for name in FAMILIES[family].archives or ilsvrc12.ARCHIVES]


def ilsvrc12_archives(wildcards):
    return [f"{archive_dir(wildcards.dataset)}/{name}" for name in ilsvrc12.ARCHIVES]


def shard_inputs(wildcards):
    return {"index": [f"data/{wildcards.dataset}/index/{name}" for name in ilsvrc12.INDEX_FILES],
            "archives": ilsvrc12_archives(wildcards), **writer_environment(wildcards)}


def shard_outputs(wildcards):
    return [f"data/{wildcards.dataset}/shards/{wildcards.format}/{shard_name(split, index, count)}"
            for split, count in PLAN.shard_counts(wildcards.dataset).items() for index in range(count)]


def failed_fetch(run):
    """The fetch status of the run's real dataset if its archives could not be had, else None."""
    if run.data_mode != "real":
        return None
    status = checkpoints.fetch.get(family=run.family).output[0]
    return status if datasets.fetch_failed(status) else None


def train_inputs(wildcards):
    run = case(wildcards)
    inputs = {}
    fetch = failed_fetch(run)
    if fetch:  # the run is recorded as failed with the fetch's reason
        inputs["fetch"] = ancient(fetch)
    elif data_input(run):
        inputs["data"] = reconverted_if_damaged(data_input(run))
    if BUILD_VENVS:
        inputs["environment"] = f".venvs/{ENVIRONMENTS[run.framework]}/environment.json"
    elif USE_CONDA and run.framework in WORKER_PYTHONS:
        inputs["environment"] = f".conda-workers/{run.framework}/environment.json"
    # Whether the record is what the config and the code ask now, from the record itself (dlbench.currency); only
    # the main Snakemake process writes the stamp, a cluster job's reads it
    record = RUN_RECORD.format(**wildcards)
    inputs["current"] = str(currency.stamp(record, RunSpec(**run_spec(wildcards)), log=lambda line: print(
        line, file=sys.stderr)) if workflow.is_main_process else currency.stamp_path(record))
    # Ancient: a ceiling measured again (a new driver) does not redo the runs measured before it.
    inputs["ceiling"] = ancient(CEILING.format(processor=placement_label(run.hardware, processor(run.device)),
                                               precision=run.precision))
    return inputs


def ceiling_inputs(wildcards):
    """The matrix product runs in PyTorch's environment: the venv where the workflow builds them."""
    return {"environment": ".venvs/pytorch/environment.json"} if BUILD_VENVS else {}


def ceiling_threads(wildcards):
    """A CPU run's cores, or a GPU run's, on the ceiling's target: those a run on the device is measured with."""
    return threads_for("gpu1" if ceiling_on_gpu(wildcards) else "cpu", ceiling_target(wildcards))


def ceiling_on_gpu(wildcards):
    return int(wildcards.processor.endswith("gpu"))


def slurm_options(target_of, gpus_of):
    """The Slurm resources of a job's hardware target (``target_of(wildcards)``: its name) that the config sets,
    as rule resources; a GPU model only for jobs that use GPUs (``gpus_of(wildcards)``; the Slurm plugin asks for
    one GPU of the model otherwise). Without targets none: the profile's resources apply."""
    def option(key):
        def value(wildcards):
            if key == "gpu_model" and not gpus_of(wildcards):
                return None
            return TARGETS[target_of(wildcards)].get("slurm", {}).get(key)
        return value
    asked = sorted({key for target in TARGETS.values() for key in target.get("slurm", {})})
    return {dlbench_config.SLURM_RESOURCES[key]: option(key) for key in asked}


def ceiling_target(wildcards):
    return parse_placement(wildcards.processor)[0]


def train_conda(wildcards):
    """The framework's environment; the workflow's where the framework runs in a worker (CNTK)."""
    framework = wildcards.framework
    if framework in WORKER_PYTHONS:
        return "../envs/workflow.yaml"
    return conda_file(ENVIRONMENTS[framework])


def train_threads(wildcards):
    run = case(wildcards)
    return threads_for(run.device, run.hardware)


def train_gpus(wildcards):
    return gpu_count(case(wildcards).device)


def train_geometry():
    """A run over nodes asks Slurm for them (dlbench.launch.slurm_resources), as a resource per key."""
    return {key: (lambda wildcards, key=key: launch.slurm_resources(case(wildcards).device)[key])
            for key in launch.slurm_resources("cpu")}


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
    return PLAN.run_spec(plan.case_key(run), int(wildcards.repetition), thread_caps(), data_input(run))


# What the runs' framework is where Snakemake sees no file of it (environment: current): the interpreter and
# its installed distributions, a params value of every run. A built environment is the run's input (a venv's
# status file, rebuilt with its requirements) or Snakemake's own (a conda environment's hash).
CURRENT_ENVIRONMENT = None if BUILD_VENVS or USE_CONDA else current_environment()


def rule_files():
    """Each rule's rules file (dlbench.stages names a job's stage by it)."""
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
    return PLAN.records_of(wildcards.dataset, wildcards.network)


def train_records(wildcards):
    return PLAN.records_of(wildcards.dataset, wildcards.network, ("train",))


def accuracy_records(wildcards):
    return PLAN.records_of(wildcards.dataset, wildcards.network, ("accuracy",))


def profile_records(wildcards):
    return PLAN.records_of(wildcards.dataset, wildcards.network, ("profile",))
