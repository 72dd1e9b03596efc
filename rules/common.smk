"""Config validation, the benchmark matrix, and the input functions the rules share."""
import os
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.settings.types import DeploymentMethod
from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))
from dlbench import config as bench_config  # noqa: E402
from dlbench.aggregate import METRICS  # noqa: E402
from dlbench.backends import FRAMEWORKS, IMPLEMENTED  # noqa: E402
from dlbench.datasets import FAMILIES  # noqa: E402
from dlbench.formats import FRAMEWORK_FORMATS, MODULES as FORMATS  # noqa: E402
from dlbench.spec import RunSpec, gpu_count, parse_dataset_label  # noqa: E402

validate(config, "../config/schema.yaml")
try:
    CASES = {(c.framework, c.dataset, c.network, c.device): c for c in bench_config.cases(config)}
except bench_config.ConfigError as error:
    raise WorkflowError(f"invalid config: {error}")

USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
REPETITIONS = range(1, config["repetitions"] + 1)
RUN_RECORD = "results/runs/{framework}/{dataset}/{network}/{device}/rep{repetition}.json"
RUNS = [RUN_RECORD.format(framework=f, dataset=d, network=n, device=v, repetition=r)
        for (f, d, n, v) in CASES for r in REPETITIONS]
CELLS = sorted({(c.dataset, c.network) for c in CASES.values()})
FIGURES = [f"results/figures/{d}/{n}/{metric}.{ext}" for d, n in CELLS for metric in METRICS
           for ext in ("png", "svg")]
DOWNLOADABLE = [name for name, family in FAMILIES.items() if family.archives]
# Datasets read from files: (label, family, mode) for every non-synthetic case with files to read.
FILE_DATASETS = sorted({(c.dataset, c.family, c.data_mode) for c in CASES.values()
                        if c.data_mode != "synthetic" and FAMILIES[c.family].unpacked})

wildcard_constraints:
    framework="|".join(FRAMEWORKS),
    device=r"cpu|gpu\d+",
    repetition=r"\d+",


def case(wildcards):
    return CASES[(wildcards.framework, wildcards.dataset, wildcards.network, wildcards.device)]


def unpacked_files(label):
    family, _ = parse_dataset_label(label)
    return [f"data/{label}/{name}" for name in FAMILIES[family].unpacked]


def needs_venv(framework):
    return framework in IMPLEMENTED and config["environment"] == "venv" and not USE_CONDA


def requirements(wildcards):
    # Beside the Snakefile, so that --directory elsewhere still finds it.
    return Path(workflow.basedir) / "envs" / f"{wildcards.framework}.requirements.txt"


def data_input(run):
    """The dataset in the run's framework's own format, or None (synthetic data, no converter yet)."""
    if run.data_mode == "synthetic" or not FAMILIES[run.family].unpacked:
        return None
    if run.framework not in FRAMEWORK_FORMATS:
        return None
    return f"data/{run.dataset}/{FRAMEWORK_FORMATS[run.framework]}"


def train_inputs(wildcards):
    run = case(wildcards)
    inputs = {}
    if data_input(run):
        inputs["data"] = data_input(run)
    if needs_venv(run.framework):
        inputs["environment"] = f".venvs/{run.framework}/environment.json"
    return inputs


def train_conda(wildcards):
    return f"../envs/{wildcards.framework}.yaml" if wildcards.framework in IMPLEMENTED else None


def train_threads(wildcards):
    if wildcards.device != "cpu":
        return config["threads"]["gpu"]
    if config["threads"]["cpu"]:
        return config["threads"]["cpu"]
    try:
        return workflow.cores  # "all cores": what Snakemake was given
    except WorkflowError:
        return os.cpu_count()


def loader_workers(device, threads):
    if config["loader_workers"] is not None:
        return config["loader_workers"]
    # A GPU run's cores feed its input pipeline while the GPU trains. A CPU run's cores all train:
    # decoding raw Datum records in-process costs 0.35 ms per 64 images here, a worker process
    # 2.0 ms (IPC), so CPU runs load in-process.
    return threads if device != "cpu" else 0


def run_spec(wildcards, threads):
    run = case(wildcards)
    return RunSpec(
        framework=run.framework, dataset=run.dataset, network=run.network, device=run.device,
        repetition=int(wildcards.repetition), batch_size_global=run.batch_size, iterations=run.iterations,
        warmup_iterations=run.warmup_iterations, learning_rate=run.learning_rate, threads=threads,
        data_dir=data_input(run),
        loader_workers=loader_workers(run.device, threads),
        seed=int(wildcards.repetition),
    )


def cell_records(wildcards):
    return [RUN_RECORD.format(framework=f, dataset=d, network=n, device=v, repetition=r)
            for (f, d, n, v) in CASES if (d, n) == (wildcards.dataset, wildcards.network)
            for r in REPETITIONS]
