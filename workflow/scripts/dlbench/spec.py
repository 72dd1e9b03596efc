"""What one training run is: the ``run`` block of the record, shared by monitor and runner.

Standard library only: the runner imports it inside framework environments.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path

DATA_MODES = ("real", "generated", "synthetic")
# The record's timing of the set-up before the timed window (schema 3; dlbench.record.build.setup_times)
SETUP_FIELDS = ("start_seconds", "import_seconds", "build_seconds", "setup_seconds", "first_step_seconds",
                "warmup_seconds")
DATASET_FAMILIES = ("mnist", "kmnist", "cifar10", "mnist10k", "imagenet", "text")  # dlbench.datasets.FAMILIES


def class_subset_label(classes: int | list[str]) -> str:
    """A class subset's part of a dataset label: ``10classes`` (that many, evenly spaced in WNID order) or, for a
    list of WNIDs, ``3classes-<6 hex digits of its digest>`` (another list is another dataset)."""
    if isinstance(classes, int):
        return f"{classes}classes"
    digest = hashlib.sha256(",".join(sorted(classes)).encode()).hexdigest()[:6]
    return f"{len(classes)}classes-{digest}"


def dataset_label(family: str, mode: str, classes: int | list[str] | None = None) -> str:
    """The dataset's name in paths and tables: ``mnist`` is real MNIST, never a stand-in; ``imagenet-10classes``
    ten of ILSVRC12's classes."""
    label = family if mode == "real" else f"{family}-{mode}"
    return f"{label}-{class_subset_label(classes)}" if classes else label


def _label_pattern(families, modes) -> str:
    return (rf"(?P<family>{'|'.join(families)})(?:-(?P<mode>{'|'.join(modes)}))?"
            r"(?:-(?P<classes>[1-9][0-9]*)classes(?:-[0-9a-f]{6})?)?")


DATASET_LABEL = re.compile(_label_pattern(DATASET_FAMILIES, [mode for mode in DATA_MODES if mode != "real"]))
# ILSVRC12's labels, real or generated, whole or a class subset (imagenet-generated-4classes), as a Snakemake
# wildcard constraint: without named groups, which Snakemake's own pattern would clash with
IMAGENET_LABEL = re.sub(r"\(\?P<\w+>", "(?:", _label_pattern(["imagenet"], ["generated"]))


def _matched_label(label: str) -> re.Match:
    found = DATASET_LABEL.fullmatch(label)
    if not found:
        raise ValueError(f"bad dataset label {label!r}: expected <{'|'.join(DATASET_FAMILIES)}>"
                         f"[-{'|-'.join(m for m in DATA_MODES if m != 'real')}][-<k>classes[-<digest>]]")
    return found


def parse_dataset_label(label: str) -> tuple[str, str]:
    found = _matched_label(label)
    return found["family"], found["mode"] or "real"


def dataset_classes(label: str) -> int | None:
    """The classes of a class subset's label (``imagenet-10classes`` -> 10); None: the family's own."""
    classes = _matched_label(label)["classes"]
    return int(classes) if classes else None


def whole_dataset(label: str) -> str:
    """The dataset a class subset is taken from (``imagenet-generated-4classes`` -> ``imagenet-generated``)."""
    return dataset_label(*parse_dataset_label(label))


# cpu, gpu<g>: one process; <n>x<cpu|gpu<g>>: data parallelism over n processes, one per node inside a Slurm
# allocation of n nodes (n local processes elsewhere); <m>x<k>x<cpu|gpu<g>>: m nodes of k processes each (m·k local
# processes elsewhere; 1x<k>x…: k processes on one node everywhere). Each process on the device after the last "x".
DEVICE = re.compile(r"(?:(?P<nodes>[1-9][0-9]*)x)??(?:(?P<processes>[1-9][0-9]*)x)?(?:cpu|gpu(?P<gpus>[1-9][0-9]*))")


def device_layout(device: str) -> tuple[int, int, int]:
    """(nodes, processes per node, GPUs per process): ``cpu`` -> (1, 1, 0), ``gpu2`` -> (1, 1, 2), ``2xcpu`` ->
    (2, 1, 0), ``2x2xgpu1`` -> (2, 2, 1)."""
    found = DEVICE.fullmatch(device)
    nodes, per_node = (found["nodes"], found["processes"]) if found else (None, None)
    if not found or (nodes and int(nodes) * int(per_node) < 2) or (per_node and not nodes and int(per_node) < 2):
        raise ValueError(f"bad device {device!r}; allowed: cpu, gpuN (N ≥ 1 GPUs), <n>x<cpu|gpuN> (n ≥ 2 processes, "
                         "one per node on a cluster: 2xcpu, 2xgpu1) or <m>x<k>x<cpu|gpuN> (m nodes of k "
                         "processes, m·k ≥ 2: 2x2xgpu1, 1x2xcpu)")
    if nodes:
        return int(nodes), int(per_node), int(found["gpus"] or 0)
    return int(per_node or 1), 1, int(found["gpus"] or 0)


def parse_device(device: str) -> tuple[int, int]:
    """``cpu`` -> (1, 0), ``gpu2`` -> (1, 2), ``2xcpu`` -> (2, 0), ``2xgpu1`` -> (2, 1), ``2x2xgpu1`` -> (4, 1):
    (processes, GPUs per process)."""
    nodes, per_node, gpus = device_layout(device)
    return nodes * per_node, gpus


# The one place a precision is added; config/schema.yaml and the record schema are tested against it.
PRECISIONS = {
    "fp32": "IEEE fp32 in every operation: TF32 off (NVIDIA_TF32_OVERRIDE=0 and the framework's own switch)",
    "tf32": "fp32 storage; convolutions and matrix products on TF32 tensor cores (NVIDIA GPUs, Ampere on)",
    "bf16": "mixed: bf16 compute (the framework's autocast or policy), fp32 master weights and loss",
    "fp16": "mixed: fp16 compute, fp32 master weights and loss, dynamic loss scaling",
}
COMPILED = "compiled"  # a variant's suffix when the framework's compiler is switched on
FIT = "fit"  # a variant's suffix when Keras trains through model.fit over NumPy arrays (a case's keras_fit)

LATENCY_CALLS = 1000  # an inference run's timed single-image calls unless its case says otherwise
EPOCHS = 10  # an accuracy run's epochs unless its case says otherwise (seed 003's)


def default_warmup(timed: int) -> int:
    """Untimed iterations (or single-image calls) before ``timed`` ones: a tenth, at least 10."""
    return max(10, math.ceil(0.1 * timed))


def variant_label(precision: str, compile: bool, batch: int | None = None, fit: bool = False) -> str:
    """How a run's numerics are named in paths and tables: ``fp32``, ``bf16-compiled``; with the batch where its
    case runs several (``fp32-b64``); trained through Keras's ``model.fit`` (``fp32-fit``)."""
    suffixes = [COMPILED] * compile + [f"b{batch}"] * bool(batch) + [FIT] * fit
    return "-".join([precision, *suffixes])


VARIANT = rf"({'|'.join(PRECISIONS)})(-{COMPILED})?(-b[1-9][0-9]*)?(-{FIT})?"  # the paths' variant wildcard


def parse_variant(label: str) -> tuple[str, bool, int | None, bool]:
    """(precision, compiled, the batch where the label names it, fit): :func:`variant_label` read back."""
    if not re.fullmatch(VARIANT, label):
        raise ValueError(f"bad variant {label!r}: expected <{'|'.join(PRECISIONS)}>[-{COMPILED}][-b<batch>][-{FIT}]")
    precision, *suffixes = label.split("-")
    return (precision, COMPILED in suffixes, next((int(s[1:]) for s in suffixes if s.startswith("b")), None),
            FIT in suffixes)


def run_variant(run: dict) -> str:
    """A record's ``run`` block's variant (:func:`variant_label`)."""
    return variant_label(run["precision"], run["compile"], run["batch_size_global"] if run.get("batch_swept") else None,
                         run.get("keras_fit", False))


# A hardware target's name (config ``hardware[].name``): a label in paths, before its devices' ("p100@gpu1")
HARDWARE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def placement_label(hardware: str | None, device: str) -> str:
    """Where a run runs, as paths name it: the device, after its hardware target's name where the config names
    targets (``p100@gpu1``); without targets the device alone, as before targets existed."""
    return f"{hardware}@{device}" if hardware else device


def parse_placement(label: str) -> tuple[str | None, str]:
    """``p100@gpu1`` -> (p100, gpu1), ``gpu1`` -> (None, gpu1): :func:`placement_label` read back."""
    hardware, _, device = label.rpartition("@")
    return hardware or None, device


def gpu_count(device: str) -> int:
    """All the GPUs a run on ``device`` uses: ``gpu2`` -> 2, ``2xgpu1`` -> 2, ``cpu`` -> 0."""
    processes, gpus = parse_device(device)
    return processes * gpus


class Labelled:
    """What a run's dataset label, placement and numerics name: shared by :class:`RunSpec` and the config's cases."""

    dataset: str
    device: str
    hardware: str | None
    precision: str
    compile: bool
    batch_size_global: int
    batch_swept: bool
    keras_fit: bool

    @property
    def placement(self) -> str:
        return placement_label(self.hardware, self.device)

    @property
    def family(self) -> str:
        return parse_dataset_label(self.dataset)[0]

    @property
    def data_mode(self) -> str:
        return parse_dataset_label(self.dataset)[1]

    @property
    def classes(self) -> int | None:
        """The classes of the dataset's subset it trains on; None: all the family's."""
        return dataset_classes(self.dataset)

    @property
    def variant(self) -> str:
        return variant_label(self.precision, self.compile, self.batch_size_global if self.batch_swept else None,
                             self.keras_fit)


# What a run adds to its case (:class:`dlbench.config.Case`, RunSpec's other fields): its repetition, which
# seeds it, and what the node gives it.
RUN_FIELDS = ("repetition", "threads", "data_dir", "loader_workers", "seed")


@dataclass(frozen=True)
class RunSpec(Labelled):
    """The one run-parameter type: a case of the config (its fields but :data:`RUN_FIELDS`) and what the run
    adds. The rules pass it whole (``params.spec``), the record's ``run`` block is made of it."""

    framework: str
    dataset: str  # label, e.g. mnist-generated
    network: str
    device: str
    repetition: int
    batch_size_global: int
    iterations: int
    warmup_iterations: int
    learning_rate: float
    threads: int
    data_dir: str | None = None  # the dataset in the framework's format; None in synthetic mode
    loader_workers: int = 0  # input-pipeline worker processes
    precision: str = "fp32"  # one of PRECISIONS
    compile: bool = False  # the framework's compiler (registry.REGISTRY[...].compiler)
    task: str = "train"  # one of tasks.TASKS
    latency_calls: int = LATENCY_CALLS  # inference: timed single-image calls, after default_warmup(them) untimed
    # accuracy: ``iterations`` are ``epochs`` times the steps of one epoch (the training images // the batch)
    epochs: int = EPOCHS
    target_accuracy: float | None = None  # accuracy: the test accuracy whose first epoch is its time to accuracy
    # The images resized to input_size x input_size RGB in the input pipeline, for the network's ImageNet layout
    # (seed 003); None: the dataset's own size, and the network's variant for it
    input_size: int | None = None
    seed: int = 0
    hardware: str | None = None  # the config's hardware target (None: no target named, this node)
    batch_swept: bool = False  # its case runs several batches: the batch names its cells (variant fp32-b64)
    # Keras trains through model.fit over the training split as NumPy arrays (seed 001's scripts), not
    # train_on_batch on the batches the timed loop feeds it (variant fp32-fit)
    keras_fit: bool = False

    @property
    def gpus(self) -> int:
        """GPUs per process: what one training process uses."""
        return parse_device(self.device)[1]

    @property
    def processes(self) -> int:
        return parse_device(self.device)[0]

    @property
    def nodes(self) -> int:
        """The nodes its processes spread over inside a Slurm allocation of as many (1: one machine)."""
        return device_layout(self.device)[0]

    @classmethod
    def from_record(cls, run: dict) -> RunSpec:
        """The spec of a record's ``run`` block (:meth:`record_block`'s): what the block leaves out at its default."""
        return cls(**{key: value for key, value in run.items() if key in cls.__dataclass_fields__})

    def record_block(self, framework_version: str | None) -> dict:
        block = asdict(self)
        block.pop("data_dir")
        block.pop("seed")
        if self.task != "inference":
            block.pop("latency_calls")
        if self.task != "accuracy":
            block.pop("epochs")
            block.pop("target_accuracy")
        for absent_when_unset in ("input_size", "hardware", "batch_swept", "keras_fit"):
            if block[absent_when_unset] in (None, False):
                block.pop(absent_when_unset)
        return {"framework": self.framework, "framework_version": framework_version,
                "data_mode": self.data_mode, **block}

    def split_warmup(self, times: list) -> tuple[list, list]:
        """A run's step times as its warm-up and its timed steps: the first ``warmup_iterations`` are the warm-up
        (the timed loop opens its window after them: dlbench.tasks.loop.timed_loop)."""
        return times[:self.warmup_iterations], times[self.warmup_iterations:]

    def dump(self, path: Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def load(cls, path: Path) -> RunSpec:
        data = json.loads(Path(path).read_text())
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
