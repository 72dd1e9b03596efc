"""The workflow's plan: the runs, their records and the tables and figures made of them, as plain data computed
from the validated config (with ``merge``, from the merged records) and the node's facts; and the names, paths and
inputs the rules wire. ``rules/*.smk`` import this module alone: ``rules/common.smk`` validates the config
(:func:`of_config`), binds what the plan computes and wraps it in input functions; the tests build plans without
Snakemake."""
from __future__ import annotations

import enum
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import config as dlbench_config
from . import datasets, files, formats, repetitions
from .config import SLURM_RESOURCES, ConfigError
from .datasets import FAMILIES, FILE_FAMILIES, fetch_failed, ilsvrc12
from .envs import (
    SOURCE_BUILDS,
    WORKER_PYTHONS,
    choose_requirements,
    cuda_builds,
    current_environment,
)
from .formats import FRAMEWORK_FORMATS, WRITER_ENVIRONMENTS, damage_stamp, shard_name
from .formats import MODULES as FORMATS
from .hardware import node
from .jobs import progress, retry, scheduler, stages, summary
from .metrics import METRICS, caption_statistics, caption_thresholds, drawn
from .record import currency
from .record.compute import processor
from .record.io import load_records
from .registry import ENVIRONMENTS, FRAMEWORKS, REGISTRY
from .run import launch
from .spec import (
    HARDWARE_NAME,
    IMAGENET_LABEL,
    PRECISIONS,
    VARIANT,
    RunSpec,
    dataset_classes,
    gpu_count,
    parse_dataset_label,
    parse_placement,
    placement_label,
    whole_dataset,
)
from .tables import merge
from .tables.appendix import scale
from .tables.merge import MergeError
from .tasks import TASKS

# What the rules and the Snakefile name: the plan's own, and the rest of the package they need, so that they import
# this module alone (tests/unit/test_plan.py holds them to it)
__all__ = [
    "CEILING", "ENVIRONMENTS", "FAMILIES", "FILE_FAMILIES", "FORMATS", "IMAGENET_LABEL", "INVALID", "METRICS",
    "NODE_FACTS", "REGRESSIONS", "RELEASE_LINES", "RELEASE_POINTS", "REPETITIONS_DECISION", "RUN_RECORD",
    "SLURM_RESOURCES", "WILDCARDS", "WORKER_ENVIRONMENTS", "Plan", "build_threads", "caption_statistics",
    "caption_thresholds", "case_key", "ceiling_device", "ceiling_of", "checked_conversion", "checked_generation",
    "conda_file", "conversion_of", "current_environment", "damage_stamps", "data_input", "datasets", "fetch_failed",
    "fetch_status", "files", "generated_archives", "generation_facts", "gpu_count", "ilsvrc12", "judge", "launch",
    "node", "of_config", "parse_dataset_label", "progress", "record_current", "requirements", "retry", "scheduler",
    "stages", "summary", "train_conda_environment", "unpacked_files", "venv_of", "venv_status", "whole_dataset",
    "worker_status", "writer_environment"
]

if TYPE_CHECKING:
    from .config import Case

# A placement is the device, after its hardware target's name where the config names targets (p100@gpu1)
RUN_RECORD = "results/runs/{framework}/{dataset}/{network}/{placement}/{variant}/{task}/rep{repetition}.json"
REPETITIONS_DECISION = repetitions.DECISION
CEILING = "results/ceilings/{processor}-{precision}.json"  # processor: cpu or gpu, after the target's name
FIGURE_FORMATS = ("png", "svg")
# The environments whose framework runs in a worker of its own Python, and the worker's script (workers/)
WORKER_ENVIRONMENTS = {framework.environment: framework.worker for framework in REGISTRY.values() if framework.worker}


def case_key(case: Case) -> tuple:
    """A case's wildcards, in the record path's order: framework, dataset, network, placement, variant, task."""
    return case.framework, case.dataset, case.network, case.placement, case.variant, case.task


@dataclass(frozen=True)
class NodeFacts:
    """What the node can measure, which decides the figures drawn: CPU energy (RAPL counters), MFU on a CPU (a
    known peak), idle GPUs' power (GPUs beside the CPU runs). With ``merge``: what the merged runs measured."""
    rapl: bool
    cpu_peak: bool
    idle_gpus: bool

    @classmethod
    def of_records(cls, records: dict) -> NodeFacts:
        return cls(rapl=any(r["power"]["cpu_energy_j"] is not None for r in records.values()),
                   cpu_peak=any(r["compute"]["mfu"] is not None and not gpu_count(r["run"]["device"])
                                for r in records.values()),
                   idle_gpus=any(r["power"].get("idle_gpu_mean_w") is not None for r in records.values()))

    @classmethod
    def of_node(cls, measured: dict, cases) -> NodeFacts:
        """The node's, as the ``node_facts`` job measured them (:func:`dlbench.hardware.node.measure`); idle GPUs are
        also beside the CPU runs where the config's other runs use GPUs."""
        return cls(rapl=measured["rapl"], cpu_peak=measured["cpu_peak"],
                   idle_gpus=any(gpu_count(c.device) for c in cases) or bool(measured["gpus"]))


class Plan:
    """The matrix of one config: its cases (keyed by :func:`case_key`) and each case's records, every repetition;
    with ``merged`` (path -> record, :func:`dlbench.tables.merge.merged_records`), the merged records' cases, and
    nothing runs. Raises :class:`dlbench.config.ConfigError` for a config that names no possible run."""

    def __init__(self, config: dict, merged: dict | None = None):
        self.config, self.merged = config, merged or {}
        self.repetitions = repetitions.target(config)
        self.targets = dlbench_config.targets(config)
        self.cases: dict[tuple, Case] = {}
        self.case_records: dict[tuple, list[str]] = {}
        if self.merged:
            for path, record in self.merged.items():
                case = merge.case_of(record)
                self.cases.setdefault(case_key(case), case)
                self.case_records.setdefault(case_key(case), []).append(str(path))
        else:
            self.cases = {case_key(case): case for case in dlbench_config.cases(config)}
            self.case_records = {key: self._repetitions(key) for key in self.cases}
        # Class subsets of ILSVRC12 by dataset label (imagenet-10classes: 10), indexed from the whole dataset's index
        self.class_subsets = dlbench_config.class_subsets(config) if not self.merged else {}
        # The tables' and figures' order of hardware targets: the config's; merged runs' in their directories' order
        self.hardware_order = [name for name in (
            dict.fromkeys(r["run"].get("hardware") for r in self.merged.values()) if self.merged else self.targets)
            if name]
        self.trained = [case for case in self.cases.values() if case.task == "train"]
        self.target_pairs = dlbench_config.target_pairs(config, self.hardware_order)

    def _repetitions(self, key: tuple, first: int = 1, last: int | None = None) -> list[str]:
        """The case's records of repetitions ``first`` to ``last`` (by default its first ``min``)."""
        return [RUN_RECORD.format(**self.wildcards(key), repetition=repetition)
                for repetition in range(first, (last or self.repetitions.min) + 1)]

    @staticmethod
    def wildcards(key: tuple) -> dict[str, str]:
        """A case's wildcards by name (those of its records' and its repetitions decision's path)."""
        return dict(zip(("framework", "dataset", "network", "placement", "variant", "task"), key))

    def adapts(self, key: tuple) -> bool:
        """Whether the case's runs after its first ``min`` wait on its repetitions decision (dlbench.repetitions)."""
        return not self.merged and self.repetitions.adapts(key[5])

    def records(self, keys=None, decided=None) -> list[str]:
        """The records of the cases ``keys`` (all by default), every repetition (with ``merge``: every record the
        merged directories hold of them). A case whose repetitions are a target has its first ``min``, and with
        ``decided`` (key -> its runs in all, the repetitions checkpoint's; None: not decided) those after them."""
        keys = list(self.cases if keys is None else keys)
        more = {key: decided(key) for key in keys if decided and self.adapts(key)}
        return [path for key in keys for path in self.case_records[key]
                + (self._repetitions(key, self.repetitions.min + 1, more[key]) if more.get(key) else [])]

    def run_summary(self, decided, log) -> str:
        """Said as the workflow ends: how many runs are ok, failed or unavailable (dlbench.jobs.summary), and with
        repetitions as a target which cases reached it (dlbench.repetitions.reached); ``decided`` as for
        :meth:`records`, ``log`` where an unreadable record is named."""
        lines = [summary.summarise(self.records(decided=decided))]
        if adapted := [key for key in self.cases if self.adapts(key)]:
            records = {key: load_records([path for path in self.records([key], decided) if Path(path).exists()],
                                         log=log) for key in adapted}
            lines.append(repetitions.reached(records, self.repetitions, self.config["statistics"]["contended"]))
        return "\n".join(lines)

    def cases_of(self, dataset: str, network: str, tasks=tuple(TASKS)) -> list[tuple]:
        return [key for key in self.cases if key[1:3] == (dataset, network) and key[5] in tasks]

    def records_of(self, dataset: str, network: str, tasks=tuple(TASKS)) -> list[str]:
        return self.records(self.cases_of(dataset, network, tasks))

    def node_facts(self, measured: dict | None) -> NodeFacts:
        """What decides the figures drawn: the merged records', else the node's (``measured`` by the node_facts job)."""
        return NodeFacts.of_records(self.merged) if self.merged else NodeFacts.of_node(measured, self.cases.values())

    def cells(self, tasks=tuple(TASKS)) -> list[tuple[str, str]]:
        """The (dataset, network) cells with cases of ``tasks``."""
        return sorted({(c.dataset, c.network) for c in self.cases.values() if c.task in tasks})

    def figures(self, facts: NodeFacts) -> list[str]:
        """A cell's figures: the metrics its runs measure (latency only where it has inference runs, GPU power only
        where it runs on GPUs, CPU energy where the node has RAPL counters, MFU where dlbench knows the peak, idle
        GPUs' power where CPU runs have GPUs beside them)."""
        return [f"results/figures/{d}/{n}/{metric}.{ext}" for d, n in self.cells() for metric in METRICS
                if drawn(metric, *zip(*[(c.task, c.device) for c in self.cases.values()
                                        if (c.dataset, c.network) == (d, n)]), **asdict(facts))
                for ext in FIGURE_FORMATS]

    def heatmaps(self, facts: NodeFacts) -> list[str]:
        """Per dataset with training runs, a heatmap of each metric with a better end that they measure (speed,
        energy per image) against the best framework's."""
        return [f"results/figures/{d}/{metric}_heatmap.{ext}" for d in sorted({c.dataset for c in self.trained})
                for metric, definition in METRICS.items()
                if definition.best and drawn(metric, ["train"], [c.device for c in self.trained if c.dataset == d],
                                       **asdict(facts))
                for ext in FIGURE_FORMATS]

    def set_against(self, case: Case) -> list[Case]:
        """The training cases a case's speed-up is set against (tables.appendix.scaling, gpu_over_cpu): its
        target's one device where it runs on several; any target's CPU where it runs on one GPU."""
        baseline, devices = scale(case.device)
        same = [o for o in self.trained if (o.dataset, o.network, o.framework, o.precision, o.compile)
                == (case.dataset, case.network, case.framework, case.precision, case.compile)]
        if devices > 1:
            return [o for o in same if (o.hardware, o.device) == (case.hardware, baseline)]
        return [o for o in same if o.device == "cpu"] if baseline == "gpu1" else []

    def scaling(self) -> list[str]:
        """Per dataset whose training runs on several devices and on one, or on a GPU and a CPU, their speed-ups."""
        return [f"results/figures/{d}/scaling.{ext}" for d in sorted({c.dataset for c in self.trained
                                                                      if self.set_against(c)})
                for ext in FIGURE_FORMATS]

    def task_targets(self) -> list[str]:
        """What the workflow makes of each task's runs (its ``targets``: dlbench.tasks.TASKS), where the config has
        cases of it: a table once, a figure per cell with such runs and figure format."""
        found = []
        for name, task in TASKS.items():
            cells = self.cells((name,))
            for target in task.targets if cells else ():
                found += ([target.format(dataset=d, network=n, ext=ext) for d, n in cells for ext in FIGURE_FORMATS]
                          if "{dataset}" in target else [target])
        return found

    def targets_over_targets(self) -> list[str]:
        """The table and figure of one hardware target over another, where the config pairs targets
        (``compare_targets``)."""
        return ["results/tables/targets.csv", *(f"results/figures/targets.{ext}" for ext in FIGURE_FORMATS)] \
            if self.target_pairs else []

    def release_lines(self) -> list[str]:
        """The release lines' table and their steps, where the config runs a framework at two releases or more
        (``releases: [current, thesis]``: a framework and its thesis's release)."""
        bases = Counter(REGISTRY[framework].base for framework in {case.framework for case in self.cases.values()}
                        if framework in REGISTRY)
        return [RELEASE_LINES, REGRESSIONS, *(f"results/figures/release_lines.{ext}" for ext in FIGURE_FORMATS)] \
            if any(count > 1 for count in bases.values()) else []

    def file_datasets(self) -> list[tuple[str, str, str]]:
        """Datasets read from files: (label, family, mode) for every non-synthetic case."""
        return sorted({(c.dataset, c.family, c.data_mode) for c in self.cases.values() if c.data_mode != "synthetic"})

    def threads(self, device: str, hardware: str | None, caps: list[int]) -> int:
        """A job's threads on ``device`` of the hardware target: the target's, else the config's, capped as
        Snakemake caps a rule's threads (``caps``: --max-threads, --cores, where given); 0 on a CPU means all the
        cores given to Snakemake."""
        kind = "gpu" if gpu_count(device) else "cpu"
        wanted = self.targets.get(hardware, {}).get("threads", {}).get(kind, self.config["threads"][kind])
        if not wanted:
            return min(caps, default=os.cpu_count())
        return min([wanted, *caps])

    def loader_workers(self, device: str, threads: int) -> int:
        if self.config["loader_workers"] is not None:
            return self.config["loader_workers"]
        # A GPU run's cores feed its input pipeline while the GPU trains. A CPU run's cores all train:
        # decoding raw Datum records in-process costs 0.35 ms per 64 images here, a worker process
        # 2.0 ms (IPC), so CPU runs load in-process.
        return threads if gpu_count(device) else 0

    def run_spec(self, key: tuple, repetition: int, caps: list[int], data_input: str | None) -> dict:
        """The run's spec as plain data: a params value of the wildcards alone, which Snakemake compares with
        the one it stored for the record (its params trigger leaves out what depends on threads, input or
        output, and values it cannot represent), so that a changed setting reruns the run."""
        case = self.cases[key]
        threads = self.threads(case.device, case.hardware, caps)
        spec = asdict(case.run_spec(repetition, threads, data_input, self.loader_workers(case.device, threads)))
        if spec["hardware"] is None:  # no target named: the spec of the runs made before targets, which stay done
            del spec["hardware"]
        if not spec["batch_swept"]:  # one batch: the spec of the runs made before batch lists, which stay done
            del spec["batch_swept"]
        return spec

    def shard_counts(self, label: str) -> dict[str, int]:
        """Conversion jobs per split: the config's, for a class subset in proportion to its share of the classes."""
        whole = whole_dataset(label)
        sizes = self.config["ilsvrc12"] if whole == "imagenet" else self.config["generated"]["imagenet"]
        classes = FAMILIES["imagenet"].classes if whole == "imagenet" else sizes["classes"]
        share = (dataset_classes(label) or classes) / classes
        return {split: max(1, round(sizes[f"{split}_shards"] * share)) for split in ("train", "test")}

    # What the rules' input functions ask of the plan

    def case_of(self, wildcards) -> Case:
        """The case of a job's wildcards (a record's: framework, dataset, network, placement, variant, task)."""
        return self.cases[(wildcards.framework, wildcards.dataset, wildcards.network, wildcards.placement,
                           wildcards.variant, wildcards.task)]

    def archive_dir(self, label: str) -> str:
        """Where a dataset's archives are: the user's ILSVRC12 directory, else data/raw/<label> (a class subset's:
        its whole dataset's)."""
        label = whole_dataset(label)
        return self.config["ilsvrc12"]["directory"] if label == "imagenet" else f"data/raw/{label}"

    def ilsvrc12_archives(self, label: str) -> list[str]:
        return [f"{self.archive_dir(label)}/{name}" for name in ilsvrc12.ARCHIVES]

    def shard_outputs(self, label: str, format_name: str) -> list[str]:
        """Each conversion job's shard of ILSVRC12 (or a class subset) in a format, every split."""
        return [f"data/{label}/shards/{format_name}/{shard_name(split, index, count)}"
                for split, count in self.shard_counts(label).items() for index in range(count)]

    def slurm_resource(self, hardware: str | None, key: str, uses_gpus: bool):
        """A job's Slurm resource ``key`` (config names) on its hardware target, where the config sets it; a GPU
        model only for jobs that use GPUs (the Slurm plugin asks for one GPU of the model otherwise)."""
        if key == "gpu_model" and not uses_gpus:
            return None
        return self.targets.get(hardware, {}).get("slurm", {}).get(key)  # no target (a converter's environment)

    def uses_gpus(self, hardware: str | None) -> bool:
        """Whether a hardware target runs on GPUs (its environments are then built where a GPU is visible); no
        target (a converter's environment where the config names targets): no."""
        return any(gpu_count(device) for device in self.targets.get(hardware, {}).get("devices", ()))

    def slurm_keys(self) -> list[str]:
        """The Slurm resources some hardware target sets (none without targets: the profile's apply)."""
        return sorted({key for target in self.targets.values() for key in target.get("slurm", {})})


def of_config(config: dict, validate, log, config_files: Iterable[str] = ()) -> Plan:
    """The plan of a config, checked: the ``config_files`` it was read from (strictly: :func:`dlbench.config.
    check_files`), its size and devices, then ``validate`` (the schema's); with ``merge``, over the merged records,
    whose reading ``log`` tells. :class:`ConfigError` or :class:`MergeError` otherwise."""
    dlbench_config.check_files(config_files)
    dlbench_config.check_size(config)
    dlbench_config.check_devices(config)
    dlbench_config.check_releases(config)
    validate(config)
    if unreleased := dlbench_config.without_releases(config):
        log(f"releases: {unreleased}")
    return Plan(config, merge.merged_records(config["merge"], log=log) if config.get("merge") else None)


INVALID = (ConfigError, MergeError)
NODE_FACTS = "results/nodes/{node}.json"
RELEASE_POINTS, RELEASE_LINES, REGRESSIONS = ("results/tables/release_points.csv", "results/tables/release_lines.csv",
                                              "results/tables/regressions.md")
# What a wildcard can be, for every rule
WILDCARDS = {
    "framework": "|".join(FRAMEWORKS),
    # A framework environment, after its hardware target's name where it is built for one (p100@pytorch)
    "venv": rf"({HARDWARE_NAME.pattern}@)?({'|'.join(sorted(set(ENVIRONMENTS.values())))})",
    "placement": rf"({HARDWARE_NAME.pattern}@)?(\d+x)?(cpu|gpu\d+)",
    "variant": VARIANT,
    "repetition": r"\d+",
    "task": "|".join(TASKS),
    "processor": rf"({HARDWARE_NAME.pattern}@)?(cpu|gpu)",
    "precision": "|".join(PRECISIONS),
}


def requirements(envs_dir: Path, environment: str) -> list[Path]:
    """An environment's requirements files: the CPU build's, and its CUDA variants where it has them (the build job
    picks: :func:`dlbench.envs.choose_requirements`)."""
    cpu = envs_dir / f"{environment}.requirements.txt"
    return [cpu, *cuda_builds(cpu)]


def conda_file(envs_dir: Path, environment: str, gpus: list[str]) -> str:
    """The conda env file of an environment on a node with ``gpus``, relative to ``rules/``."""
    chosen, _ = choose_requirements(envs_dir / f"{environment}.yaml", gpus)
    return f"../envs/{chosen.name}"


def train_conda_environment(framework: str) -> str | None:
    """The framework environment a run's job runs in with conda; None (the workflow's) where the framework runs in a
    worker of its own (CNTK)."""
    return None if ENVIRONMENTS[framework] in WORKER_PYTHONS else ENVIRONMENTS[framework]


def build_threads(environment: str, cores: int) -> int:
    """Compiling a framework (Caffe: about 4 minutes on 2 cores) uses every core; pip installs take one."""
    return cores if environment in SOURCE_BUILDS else 1


def data_input(case: Case) -> str | None:
    """The dataset in the case's framework's own format, or None (synthetic data)."""
    if case.data_mode == "synthetic":
        return None
    return f"data/{case.dataset}/{FRAMEWORK_FORMATS[case.framework]}"


def writer_environment(format_name: str) -> str | None:
    """The framework whose environment a format's writer runs in (RecordIO: MXNet's), or None (the workflow's)."""
    return WRITER_ENVIRONMENTS.get(format_name)


def venv_status(environment: str, hardware: str | None = None) -> str:
    """A framework environment's status file: one per hardware target, built on a node of it (its Slurm partition,
    or this node), where the config names targets; the same build for two targets is shared where environments
    are (DLBENCH_VENV_ROOT: dlbench.envs.shared_build)."""
    return f".venvs/{placement_label(hardware, environment)}/environment.json"


def venv_of(label: str) -> tuple[str | None, str]:
    """A venv wildcard's hardware target (None: untargeted) and environment."""
    return parse_placement(label)


def worker_status(framework: str) -> str | None:
    """With conda, the status file of the worker environment a framework runs in (CNTK's), or None."""
    environment = ENVIRONMENTS[framework]
    return f".conda-workers/{environment}/environment.json" if environment in WORKER_PYTHONS else None


def fetch_status(family: str) -> str:
    return f"data/raw/{family}/fetch.json"


def generated_archives(label: str) -> list[str]:
    family, _ = parse_dataset_label(label)
    return [f"data/raw/{label}/{name}" for name in FAMILIES[family].archives or ilsvrc12.ARCHIVES]


def unpacked_files(label: str) -> list[str]:
    family, _ = parse_dataset_label(label)
    return [f"data/{label}/{name}" for name in FAMILIES[family].unpacked]


def ceiling_of(case: Case) -> str:
    """The ceiling a run's ``ceiling_fraction`` divides by: its target's processor's, in its precision."""
    return CEILING.format(processor=placement_label(case.hardware, processor(case.device)), precision=case.precision)


def ceiling_device(processor_label: str) -> tuple[str | None, str]:
    """A ceiling's hardware target and the device its threads are a run's on: gpu1 for a GPU, else cpu."""
    hardware, kind = parse_placement(processor_label)
    return hardware, "gpu1" if kind == "gpu" else "cpu"


# Where a dry run writes the stamps it would write (dlbench.record.currency, dlbench.formats.stamp_if_damaged):
# in Snakemake's own directory, which a dry run writes too, so that results/ and data/ stay as they are while the
# stand-ins, dated now, have Snakemake plan exactly the jobs the stamps would rerun.
DRY_RUN_ROOT = Path(".snakemake/dlbench/dry-run")
_STOOD_IN: set[str] = set()  # the damage stamps' stand-ins this process wrote


class Judge(enum.Enum):
    """Which Snakemake process judges records and datasets (their currency, their damage) while the DAG is built,
    and where it writes the stamps that make Snakemake run them again."""

    NONE = "a cluster job's own Snakemake: it judges nothing and reads the stamps the main process wrote"
    WRITES = "the main process of a run: it judges and writes its stamps"
    DRY_RUN = "the main process of a dry run, or of --summary or --report: it writes its stamps under DRY_RUN_ROOT"

    @property
    def root(self) -> Path:
        return DRY_RUN_ROOT if self is Judge.DRY_RUN else Path(".")


def judge(main_process: bool, writes: bool) -> Judge:
    return Judge.NONE if not main_process else Judge.WRITES if writes else Judge.DRY_RUN


def record_current(record: str, spec: dict, judge: Judge, log) -> str:
    """The record's currency stamp (:mod:`dlbench.record.currency`): written by the process that ``judge``\\ s (the
    main Snakemake process), read by a cluster job's."""
    if judge is Judge.NONE:
        return str(currency.stamp_path(record))
    return str(currency.stamp(record, RunSpec(**spec), log=log, root=judge.root))


def checked_conversion(format_dir: str, judge: Judge, log) -> str:
    """A converted dataset, whose conversion is first stamped for converting again where its sizes no longer match
    what it wrote (:func:`dlbench.formats.stamp_if_damaged`); only the process that ``judge``\\ s looks."""
    if judge is not Judge.NONE and Path(format_dir).exists():
        found = formats.stamp_if_damaged(Path(format_dir), root=judge.root)
        if found:
            said, stamps = found
            _STOOD_IN.update(map(str, stamps))
            log(f"dlbench: {said}")
    return format_dir


GENERATED_FACTS = "generated.json"  # beside a generated stand-in's archives: what it was generated with


def generation_facts(sizes: dict, generator: str) -> dict:
    """What a generated stand-in is generated with, as its generate job writes it and the plan compares it."""
    return {"sizes": sizes, "generator": generator}


def checked_generation(raw_dir: str, asked: dict, judge: Judge, log) -> list[str]:
    r"""A generate job's damage stamps (:func:`damage_stamps`), one first written, dated now, where the stand-in in
    ``raw_dir`` was generated with other sizes, seed or generator than ``asked`` (:func:`generation_facts`): its
    generation, and so its conversions and the runs on them, are made again even where Snakemake's metadata, which
    would see the changed params, is lost. Only the process that ``judge``\ s looks."""
    facts = Path(raw_dir) / GENERATED_FACTS
    if judge is not Judge.NONE and facts.exists():
        try:
            found = files.read_json(facts)
        except files.Unreadable as error:
            found = {"unreadable": str(error)}
        if found != asked:
            stamp = damage_stamp(raw_dir)
            written = files.directory(judge.root / stamp.parent, judge.root / formats.DAMAGE_STAMPS) / stamp.name
            files.write_json(written, {"target": raw_dir, "found": found, "asked": asked}, indent=1)
            _STOOD_IN.add(str(written))
            log(f"dlbench: {raw_dir} was generated with {found}, the config asks {asked}: generating it again")
    return damage_stamps(raw_dir)


def conversion_of(output: str) -> str:
    """The converted dataset a conversion job's output belongs to: itself, or a shard's (``data/<dataset>/shards/
    <format>/<shard>``: ``data/<dataset>/<format>``)."""
    parts = Path(output).parts
    return str(Path(*parts[:-3], parts[-2])) if len(parts) > 3 and parts[-3] == "shards" else output


def damage_stamps(output: str) -> list[str]:
    """An input of a conversion job: its damage stamp, where one was ever written (a newer stamp reruns the job);
    in a dry run, the stand-in of one it would write (:data:`DRY_RUN_ROOT`)."""
    stamp = damage_stamp(output)
    if str(DRY_RUN_ROOT / stamp) in _STOOD_IN:
        return [str(DRY_RUN_ROOT / stamp)]
    return [str(stamp)] if stamp.exists() else []
