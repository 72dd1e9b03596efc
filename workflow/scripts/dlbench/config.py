"""The benchmark matrix from a validated config, with the thesis's Figure 4.5 as defaults.

The JSON schema (config/schema.yaml) checks types, names and ranges; this module checks what
a schema cannot (a network not sized for a dataset, warm-up longer than the run)
and names the offending key and what is allowed.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Iterable
from dataclasses import MISSING, asdict, field, fields, make_dataclass
from pathlib import Path

import yaml

from .datasets import FAMILIES, RESIZED_SIZING
from .networks import REGISTRY, SIZINGS
from .registry import REGISTRY as FRAMEWORKS
from .registry import release_line, release_named, with_releases
from .spec import (
    EPOCHS,
    LATENCY_CALLS,
    RUN_FIELDS,
    Labelled,
    RunSpec,
    dataset_label,
    default_warmup,
    parse_device,
)

# Figure 4.5 per (dataset family, network): a family takes the values of the network's sizing for it
# (KMNIST, not in the thesis, MNIST's: same size and shape).
FIGURE_4_5 = {(family, name): row.figure_4_5[facts.sized_for] for family, facts in FAMILIES.items()
              for name, row in REGISTRY.items() if facts.sized_for in row.figure_4_5}


class ConfigError(ValueError):
    pass


# Set to 1 to run a config file that is a YTE template (``__use_yte__: true``) on purpose
YTE_OPT_IN = "DLBENCH_ALLOW_YTE"


class _UniqueKeys(yaml.SafeLoader):
    """YAML's safe loader, refusing a mapping that gives a key twice (PyYAML, as Snakemake, keeps the last)."""

    def construct_mapping(self, node, deep=False):
        first_lines = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in first_lines:
                raise ConfigError(f"{key_node.start_mark.name}: key {key!r} is given twice, on lines {first_lines[key]}"
                                  f" and {line}; the second would silently replace the first")
            first_lines[key] = line
        return super().construct_mapping(node, deep)


def check_files(paths: Iterable[str | Path]) -> None:
    """Each config file Snakemake was given, read again as data alone: a key given twice in a mapping is refused,
    naming the file, the key and both lines; so is a YTE template (``__use_yte__: true``) unless ``$DLBENCH_ALLOW_YTE``
    is 1. A template's Python has already run by then (Snakemake reads the config files before the workflow):
    refusing it keeps its results out of the plan, it cannot undo what it did."""
    for path in paths:
        with open(path) as stream:
            loader = _UniqueKeys(stream)
            loader.name = str(path)
            try:
                document = loader.get_single_data()
            except yaml.YAMLError as error:
                raise ConfigError(f"{path}: not YAML: {error}") from None
            finally:
                loader.dispose()
        if isinstance(document, dict) and document.get("__use_yte__") and os.environ.get(YTE_OPT_IN) != "1":
            raise ConfigError(f"{path}: __use_yte__: true makes this config file a YTE template, whose Python "
                              f"Snakemake has already run; a dlbench config is data. To use a template on purpose, "
                              f"set {YTE_OPT_IN}=1")


def _run_spec(self, repetition: int, threads: int, data_dir: str | None, loader_workers: int) -> RunSpec:
    """Repetition ``repetition`` of the case (which also seeds it) with what the node gives it: its threads, the
    dataset in its framework's format (None in synthetic mode) and its loader workers."""
    return RunSpec(**asdict(self), repetition=repetition, threads=threads, data_dir=data_dir,
                   loader_workers=loader_workers, seed=repetition)


# One (framework, dataset, network, device, variant, task) cell; it runs ``repetitions`` times. Its fields are
# RunSpec's but what a run adds (spec.RUN_FIELDS), so that a run parameter is defined once, in spec.py.
Case = make_dataclass(
    "Case", [(f.name, f.type, field(default=f.default)) if f.default is not MISSING else (f.name, f.type)
             for f in fields(RunSpec) if f.name not in RUN_FIELDS],
    bases=(Labelled,), frozen=True, namespace={"run_spec": _run_spec, "__module__": __name__})


# Far beyond a benchmark config (the shipped ones hold about a hundred values and a few hundred cases), and small
# enough that the schema and the matrix answer within a second
MAX_CONFIG_VALUES = 10_000
MAX_CASES = 10_000


def check_size(config: dict) -> None:
    """Before anything reads the config whole: refused at once where it holds more values than a benchmark
    config means (a list of 100,000 batch sizes; YAML aliases nested into billions of values, which the YAML
    parser shares rather than copies but every reader after it expands), or where its benchmarks would make
    more cases than a workflow can run (counted from the lists' lengths, before any case is made)."""
    for key, value in config.items():
        budget, stack = MAX_CONFIG_VALUES, [value]
        while stack:
            item = stack.pop()
            budget -= 1
            if budget < 0:
                raise ConfigError(f"{key}: more than {MAX_CONFIG_VALUES:,} values (a YAML alias counts each time it "
                                  f"is used); allowed: at most {MAX_CONFIG_VALUES:,}")
            stack.extend(item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())

    def length(value) -> int:
        return len(value) if isinstance(value, list) else 1

    hardware = max(1, length(config.get("hardware") or []))
    per_entry = (length(config.get("devices")) * hardware * length(config.get("precisions"))
                 * length(config.get("compile")))
    benchmarks = config.get("benchmarks") if isinstance(config.get("benchmarks"), list) else []
    most = sum(per_entry * length(entry.get("networks")) * length(entry.get("batch_size"))
               * length(entry.get("frameworks", config.get("frameworks"))) * length(entry.get("tasks"))
               for entry in benchmarks if isinstance(entry, dict))
    if most > MAX_CASES:
        raise ConfigError(f"benchmarks: up to {most:,} cases (networks x batch sizes x frameworks x tasks of each "
                          f"entry, x devices x hardware targets x precisions x compile); allowed: at most "
                          f"{MAX_CASES:,}")


def check_devices(config: dict) -> None:
    """Before the schema, whose pattern error shows only a regular expression: the device in words."""
    for index, device in enumerate(config.get("devices") or []):
        try:
            parse_device(str(device))
        except ValueError as error:
            raise ConfigError(f"devices[{index}]: {error}") from None


def check_releases(config: dict) -> None:
    """Before the schema: a release line's versions are words (YAML reads 1.10 as the number 1.1), each framework it
    names is today's release of one, and each version is a release of it that a backend speaks, else refused naming
    the framework's line."""
    lines = config.get("releases")
    if not isinstance(lines, dict):
        return
    for name, versions in lines.items():
        where = f"releases.{name}"
        if name not in FRAMEWORKS or FRAMEWORKS[name].release != "current":
            lined = sorted({entry.base for entry in FRAMEWORKS.values() if len(release_line(entry.base)) > 1})
            raise ConfigError(f"{where}: a release line is named by today's framework; those with several releases: "
                              f"{', '.join(lined)}")
        line = ", ".join(entry.version for entry in release_line(name))
        for version in versions if isinstance(versions, list) else [versions]:
            if not isinstance(version, str):
                raise ConfigError(f"{where}: {version!r} is a number to YAML (1.10 would be 1.1): quote each version "
                                  f"(\"1.4\"); {name}'s releases: {line}")
            if release_named(name, version) is None:
                raise ConfigError(f"{where}: no backend speaks {name} {version}; its releases here: {line}")


# A target's Slurm options and the snakemake-executor-plugin-slurm resources its jobs ask for them with
SLURM_RESOURCES = {"partition": "slurm_partition", "account": "slurm_account", "constraint": "constraint",
                   "qos": "qos", "gpu_model": "gpu_model"}
# The thesis's GPU models (config ``hardware[].thesis``); a GPU target compared with one is set beside its column
THESIS_GPUS = ("k20m", "p100")


def target_pairs(config: dict, names: list[str]) -> list[tuple[str, str]]:
    """The config's ``compare_targets``, each (target, baseline) checked: two hardware targets of ``names`` that
    share a device."""
    found = []
    for index, pair in enumerate(config.get("compare_targets") or ()):
        where = f"compare_targets[{index}]"
        for name in pair:
            if name not in names:
                raise ConfigError(f"{where}: {name!r} is not a hardware target of this config; allowed: "
                                  f"{', '.join(names) or 'none (the config names no hardware targets)'}")
        target, baseline = pair
        if target == baseline:
            raise ConfigError(f"{where}: {target} against itself; name two targets")
        if config.get("hardware"):
            devices = {t["name"]: set(t["devices"]) for t in config["hardware"]}
            if not devices[target] & devices[baseline]:
                raise ConfigError(f"{where}: {target} ({', '.join(sorted(devices[target]))}) and {baseline} "
                                  f"({', '.join(sorted(devices[baseline]))}) share no device: no cell to set one "
                                  "against the other")
        found.append((target, baseline))
    return found


def targets(config: dict) -> dict[str | None, dict]:
    """The config's hardware targets by name, checked against the devices and each other; without
    ``hardware``, one unnamed target that runs every device on every dataset (the node, or the profile's Slurm
    resources)."""
    if not config.get("hardware"):
        return {None: {"name": None, "devices": list(config["devices"])}}
    found = {}
    for index, target in enumerate(config["hardware"]):
        where = f"hardware[{index}]"
        if target["name"] in found:
            raise ConfigError(f"{where}.name: {target['name']!r} names two targets; each column needs its own")
        for device in target["devices"]:
            if device not in config["devices"]:
                raise ConfigError(f"{where}.devices: {device} is not among the config's devices; allowed: "
                                  f"{', '.join(config['devices'])}")
        if target.get("thesis") and not any(parse_device(d) == (1, g) for d in target["devices"] for g in (1, 2)):
            raise ConfigError(f"{where}.thesis: the thesis's {target['thesis']} columns are one and two GPUs in one "
                              f"process; this target's devices: {', '.join(target['devices'])}")
        found[target["name"]] = target
    # An option one target's jobs ask for and another's not would go to the cluster's default for the other
    # (a rule's resource replaces the profile's): the same options for every target, but the GPU model (not
    # asked for by CPU runs)
    asked = {name: set(target.get("slurm", {})) - {"gpu_model"} for name, target in found.items()}
    for name, options in asked.items():
        for other, other_options in asked.items():
            if options - other_options:
                raise ConfigError(f"hardware: {name} sets slurm.{', slurm.'.join(sorted(options - other_options))} "
                                  f"and {other} does not; a Slurm option of one target is set for every target "
                                  "(else its jobs go to the cluster's default)")
    return found


def training_images(config: dict, family: str, mode: str) -> int | None:
    """The images of a dataset's training split, where known before it is read."""
    if mode == "generated":
        return (config["generated"]["imagenet"] if family == "imagenet" else config["generated"])["train_images"]
    return FAMILIES[family].train_images


def accuracy_iterations(config: dict, entry: dict, where: str, batch: int) -> int:
    """An accuracy case's training steps: its epochs of ``training images // batch`` steps each."""
    family, mode = entry["dataset"], entry.get("data", "real")
    for key in ("iterations", "warmup_iterations", "warmup_added"):
        if key in entry and entry["tasks"] == ["accuracy"]:  # beside a speed task they are that one's
            raise ConfigError(f"{where}.{key}: an accuracy case trains whole epochs "
                              f"(epochs: {entry.get('epochs', EPOCHS)}) and times all of them; set epochs instead")
    if mode == "synthetic":
        raise ConfigError(f"{where}.data: accuracy needs a test set, which synthetic data has not; "
                          "allowed: real, generated")
    images = training_images(config, family, mode)
    if images is None:
        known = ", ".join(name for name, facts in FAMILIES.items() if facts.train_images)
        raise ConfigError(f"{where}.dataset: accuracy runs on datasets whose training images are known before they "
                          f"are read; allowed: {known}, and generated imagenet")
    if images < batch:
        raise ConfigError(f"{where}.batch_size: {batch} is more than the {images} training images of one epoch")
    return entry.get("epochs", EPOCHS) * (images // batch)


def without_releases(config: dict) -> str:
    """Which of the config's frameworks lack a release its ``releases`` asks for (none registered yet, or today's is
    the thesis's too), in words; empty where none do, and for release lines (:func:`check_releases` has refused a
    version no backend speaks)."""
    if not isinstance(config["releases"], list):  # a line: what it names is checked, and its lines are whole
        return ""
    named = {name for entry in config["benchmarks"] for name in entry.get("frameworks", config["frameworks"])}
    lacking = {release: sorted(name for name in named if not FRAMEWORKS[name].release_of and not any(
        entry.base == name and entry.release == release for entry in FRAMEWORKS.values()))
        for release in config["releases"]}
    said = []
    for release, names in lacking.items():
        same = [name for name in names if release == "thesis" and FRAMEWORKS[name].also_thesis]
        said += [f"{name}: {FRAMEWORKS[name].also_thesis}, one cell for both" for name in same]
        if others := [name for name in names if name not in same]:
            said.append(f"no {release} release of {', '.join(others)} yet (no backend speaks it): today's alone runs")
    return "; ".join(said)


def cases(config: dict) -> list[Case]:
    found: dict[tuple, Case] = {}
    for index, entry in enumerate(config["benchmarks"]):
        where = f"benchmarks[{index}]"
        family, mode = entry["dataset"], entry.get("data", "real")
        input_size = entry.get("input_size")
        sizing = RESIZED_SIZING if input_size else FAMILIES[family].sized_for
        if input_size and FAMILIES[family].sized_for in (RESIZED_SIZING, "text"):
            resizable = sorted(name for name, f in FAMILIES.items() if f.sized_for not in (RESIZED_SIZING, "text"))
            raise ConfigError(f"{where}.input_size: {family} images are not resized (ImageNet's are that size, "
                              f"text has none); allowed for: {', '.join(resizable)}")
        if mode not in FAMILIES[family].modes:
            raise ConfigError(f"{where}.data: {family} has no {mode} data; "
                              f"allowed: {', '.join(FAMILIES[family].modes)}")
        if family == "imagenet" and mode == "real" and not config.get("ilsvrc12", {}).get("directory"):
            raise ConfigError(f"{where}.data: real ImageNet needs ilsvrc12.directory (the directory holding "
                              "your ILSVRC2012 archives; it cannot be downloaded); without it allowed: "
                              "generated, synthetic")
        classes = entry.get("classes")
        if classes is not None:
            check_classes(config, where, family, mode, classes)
        frameworks = with_releases(entry.get("frameworks", config["frameworks"]), config["releases"])
        if not frameworks:
            released = sorted({entry.base for entry in FRAMEWORKS.values() if entry.release in config["releases"]})
            raise ConfigError(f"{where}: none of its frameworks has a release of {', '.join(config['releases'])} "
                              f"(releases); those that have: {', '.join(released)}")
        tasks = entry.get("tasks", ["train"])
        if entry.get("keras_fit"):
            check_keras_fit(where, frameworks, tasks)
        for framework in entry.get("frameworks", []):  # named for this case: it must run the case's tasks
            if set(tasks) - set(FRAMEWORKS[framework].tasks):
                raise ConfigError(f"{where}.frameworks: {framework} runs {', '.join(FRAMEWORKS[framework].tasks)} "
                                  f"only; this case's tasks: {', '.join(tasks)}")
        for network in entry["networks"]:
            if sizing not in SIZINGS[network]:
                allowed = ", ".join(n for n, v in SIZINGS.items() if sizing in v)
                sized = f"a {input_size}x{input_size} input" if input_size else family
                raise ConfigError(f"{where}.networks: {network} is not sized for {sized}; "
                                  f"allowed for {family}{' at that size' if input_size else ''}: {allowed}")
            batch, iterations, rate = REGISTRY[network].figure_4_5[sizing]
            batches = entry.get("batch_size", batch)
            swept = isinstance(batches, list)  # several: each names its cells (seed 004's AlexNet at 64 and 128)
            iterations = entry.get("iterations", iterations)
            rate = entry.get("learning_rate", rate)
            warmup = entry.get("warmup_iterations", default_warmup(iterations))
            if entry.get("warmup_added"):  # the thesis timed all of Figure 4.5's iterations: warm-up before them
                iterations += warmup
            if warmup >= iterations:
                raise ConfigError(f"{where}.warmup_iterations: {warmup} warm-up iterations leave no timed "
                                  f"iteration of {iterations} ({network}); allowed: 0 to {iterations - 1}, or "
                                  "warmup_added: true")
            for batch in batches if swept else [batches]:
                check_batch(config, where, family, mode, batch, input_size)
                for case in _network_cases(config, entry, where, dataset_label(family, mode, classes), network,
                                           tasks, frameworks, batch, swept, (iterations, warmup, rate)):
                    key = (case.framework, case.dataset, network, case.hardware, case.device, case.variant, case.task)
                    if key in found:
                        raise ConfigError(f"{where}: {network} on {case.dataset} is listed twice")
                    found[key] = case
    return list(found.values())


def _network_cases(config: dict, entry: dict, where: str, dataset: str, network: str, tasks: list,
                   frameworks: list, batch: int, swept: bool, training: tuple) -> list[Case]:
    """A case's cells of one network at one batch: every placement, framework, numerics and task."""
    iterations, warmup, rate = training
    family = entry["dataset"]
    if "accuracy" in tasks:
        accuracy_steps = accuracy_iterations(config, entry, where, batch)
    made = []
    for hardware, device in placements(config, family):
        processes, gpus = parse_device(device)
        shares = processes * max(gpus, 1)  # the global batch is split over them
        if batch % shares:
            raise ConfigError(f"{where}.batch_size: {batch} cannot be split over {shares} devices "
                              f"({network} on {device}); allowed: a multiple of {shares}")
        for framework, precision, compile, task in itertools.product(
                frameworks, config["precisions"], config["compile"], tasks):
            if task not in FRAMEWORKS[framework].tasks:
                continue  # an inference-only framework among the config's has no training cells
            steps = (accuracy_steps, 0) if task == "accuracy" else (iterations, warmup)
            # A task's own settings only in its cases: another task's change reruns none of them
            own = ({"latency_calls": entry.get("latency_calls", LATENCY_CALLS)} if task == "inference" else
                   {"epochs": entry.get("epochs", EPOCHS), "target_accuracy": entry.get("target_accuracy")}
                   if task == "accuracy" else {})
            made.append(Case(framework=framework, dataset=dataset, network=network,
                             device=device, hardware=hardware, batch_size_global=batch, batch_swept=swept,
                             iterations=steps[0], warmup_iterations=steps[1], learning_rate=rate,
                             precision=precision, compile=compile, task=task, input_size=entry.get("input_size"),
                             keras_fit=entry.get("keras_fit", False), **own))
    return made


def node_memory_bytes() -> int | None:
    """This node's physical memory, where the plan is made (sysconf: no hardware is asked)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return None


def check_batch(config: dict, where: str, family: str, mode: str, batch: int, input_size: int | None) -> None:
    """A batch a run can hold: no more than the stored training images it draws from, and a batch of input images
    (fp32) no larger than this node's memory, which no run could allocate; found when the plan is made, not when
    the run fails."""
    images = training_images(config, family, mode) if mode != "synthetic" else None
    if images is not None and batch > images:
        source = "generated.train_images" if mode == "generated" else f"{family}'s training split"
        raise ConfigError(f"{where}.batch_size: {batch} is more than the {images:,} training images ({source}); "
                          f"allowed: at most {images:,}")
    shape = (3, input_size, input_size) if input_size else FAMILIES[family].image_shape
    needed, memory = batch * math.prod(shape) * 4, node_memory_bytes()
    if memory is not None and needed > memory:
        raise ConfigError(f"{where}.batch_size: {batch} images of {'x'.join(map(str, shape))} are "
                          f"{needed / 2**30:,.1f} GiB as fp32 before any layer, more than this node's "
                          f"{memory / 2**30:,.1f} GiB of memory; allowed: at most {memory // (math.prod(shape) * 4):,}")


def check_keras_fit(where: str, frameworks: list[str], tasks: list[str]) -> None:
    """model.fit is Keras's, and it trains: a keras_fit case names only Keras frameworks and the train task."""
    keras = [name for name, framework in FRAMEWORKS.items() if framework.keras]
    others = [framework for framework in frameworks if framework not in keras]
    if others:
        raise ConfigError(f"{where}.keras_fit: model.fit is Keras's; the case runs {', '.join(others)} too: name "
                          f"its frameworks (allowed: {', '.join(keras)})")
    if tasks != ["train"]:
        raise ConfigError(f"{where}.keras_fit: model.fit times training; the case's tasks: {', '.join(tasks)} "
                          "(allowed: train)")


def check_classes(config: dict, where: str, family: str, mode: str, classes: int | list[str]) -> None:
    """A class subset is ILSVRC12's (its index is what is subset), of no more classes than the dataset has."""
    if family != "imagenet" or mode == "synthetic":
        raise ConfigError(f"{where}.classes: a class subset is taken from ILSVRC12's files; allowed with "
                          "dataset: imagenet, data: real or generated")
    whole = config["generated"]["imagenet"]["classes"] if mode == "generated" else FAMILIES[family].classes
    if isinstance(classes, int) and classes > whole:
        raise ConfigError(f"{where}.classes: {classes} of the {whole} classes of {dataset_label(family, mode)}; "
                          f"allowed: 2 to {whole}")


def class_subsets(config: dict) -> dict[str, int | list[str]]:
    """Each class subset's dataset label and its classes (a count or WNIDs), as the config's cases name them."""
    return {dataset_label(entry["dataset"], entry.get("data", "real"), entry["classes"]): entry["classes"]
            for entry in config["benchmarks"] if entry.get("classes") is not None}


def placements(config: dict, family: str) -> list[tuple[str | None, str]]:
    """(target, device) of every device a target runs on the dataset family, in the config's order."""
    return [(name, device) for name, target in targets(config).items()
            if family in target.get("datasets", [family]) for device in config["devices"]
            if device in target["devices"]]


def config_sha256(config: dict) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()


def mirrors(config: dict, family: str) -> list[str]:
    return config.get("mirrors", {}).get(family) or list(FAMILIES[family].mirrors)
