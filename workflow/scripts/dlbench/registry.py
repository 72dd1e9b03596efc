"""The framework registry: every framework the workflow runs, and the facts about it that the
environments, formats, launchers, config checks, backends and tables need (standard library only, so
that every module can import it without a framework installed). The one place a framework is added."""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from .tasks import TASKS


@dataclass(frozen=True)
class Framework:
    """One row of the framework registry: everything the workflow needs to know to run it."""

    name: str  # as in configs, paths and records
    module: str  # its backend, dlbench.backends.<module>
    environment: str  # envs/<environment>.*, .venvs/<environment>: Keras shares its backend's
    data_format: str  # the format its input pipeline reads (dlbench.formats)
    # Who starts the processes of a run over several (<n>x<device>; dlbench.run.launch): "torchrun" starts n
    # runners; "srun" starts one per node of a Slurm allocation; "ps-lite" starts n workers with their parameter
    # servers (dlbench.run.ps_lite); "mpiexec" is started by the one runner's backend, one MPI rank per device.
    launcher: str | None = None
    # Of spec.PRECISIONS, those the backend sets up (tf32: a switch for both its cuDNN and its
    # cuBLAS calls; NVIDIA_TF32_OVERRIDE=0 can only switch TF32 off). TF32 is a GPU math mode.
    cpu_precisions: tuple[str, ...] = ("fp32",)
    gpu_precisions: tuple[str, ...] = ("fp32",)
    compiler: str | None = None  # what compile: true switches on
    always_compiled: str | None = None  # what compiles every run, compile: false too
    # Per optimizer kind (networks.Optimizer), how the framework's own differs from the description
    # (tests/unit/backends/test_backends.py steps each): the record's execution.optimizer_difference.
    optimizer_differences: dict[str, str] = field(default_factory=dict)
    tasks: tuple[str, ...] = tuple(TASKS)  # of tasks.TASKS, those it can run (ONNX Runtime cannot train)
    # Of those, the ones its backend does not run yet, and why: their cells are made, and recorded unavailable
    not_yet: dict[str, str] = field(default_factory=dict)
    # The native framework it runs on (Keras's backend; the exporter ONNX Runtime runs the network of):
    # the API-cost table gives its numbers relative to that one's (seed 002's question).
    runs_on: str | None = None
    # Which release of the framework it is: today's ("current"), or the one the seeds measured ("thesis": the
    # thesis's Figure 4.3 versions), with the name of today's whose release it is (config releases)
    release: str = "current"
    release_of: str | None = None
    # Where today's release is the thesis's too (Caffe 1.0), which it has no entry of its own for: its cells stand for
    # both, and config releases says so
    also_thesis: str | None = None
    # Its worker's script in workflow/scripts/workers/, where its wheels need an older CPython than the workflow's
    # (envs.WORKER_PYTHONS): the runner drives the framework there (dlbench.backends.worker)
    worker: str | None = None
    # The release it installs, as its environment pins it (tests/unit/test_registry.py checks the pin): what a config's
    # release line names (releases: {mxnet: ["1.2", "1.9"]}); empty for what has no release line (cuDNN's calls)
    version: str = ""
    released: str = ""  # that release's date: PyPI's first upload of it (ISO), where a release line's figure places it

    @property
    def base(self) -> str:
        """The framework this is a release of: itself for today's."""
        return self.release_of or self.name

    @property
    def keras(self) -> bool:
        """Keras's high-level API, whose backend its name ends with (``keras_fit``: its own model.fit)."""
        return self.name.startswith(("keras-", "keras2-"))

    @property
    def runs(self) -> tuple[str, ...]:
        """The tasks its backend runs."""
        return tuple(task for task in self.tasks if task not in self.not_yet)


MIXED = ("bf16", "fp16")
# Framework.release (config releases): today's, the thesis's, and those between them that a backend speaks
RELEASES = ("current", "thesis", "between")
# The release line a config names in a word (releases: thesis-to-today): each framework named at every release a
# backend speaks, from the thesis's to today's
THESIS_TO_TODAY = "thesis-to-today"
EPSILON_AFTER_ROOT = {"rmsprop": "epsilon after the square root: g / (sqrt(s) + epsilon)"}
CNTK_RMSPROP = {"rmsprop": "the mean square starts at the first squared gradient, not at 0, and has no epsilon: the "
                           "first steps are rate x sign(g), about a third of the others' (with rho 0.9)"}
MXNET_1_2 = Framework("mxnet-1.2", "mxnet_worker", "mxnet-1.2", "recordio",
                      always_compiled="Gluon hybridize (static graph)", release="thesis", release_of="mxnet",
                      worker="mxnet_worker.py", version="1.2.0", released="2018-05-21")
TENSORFLOW = Framework("tensorflow", "tensorflow", "tensorflow", "tfrecord", launcher="srun",
                       cpu_precisions=("fp32", "bf16"), gpu_precisions=("fp32", "tf32", *MIXED),
                       compiler="XLA (tf.function jit_compile)", always_compiled="tf.function graph", version="2.21.0",
                       released="2026-03-06")
# The one place a framework is added: the thesis's five, then Keras 3's high-level API on three
# backends (seed 001's keras-mxnet comparison in its modern form), then ONNX Runtime on the network
# PyTorch exports, the network in TensorFlow's raw tf.nn ops and in cuDNN calls (seed 002's low-level
# references, inference only). config/schema.yaml, the run
# record's schema and docs/environments.md's table are checked against it (tests/unit/test_registry.py).
REGISTRY = {framework.name: framework for framework in (
    Framework("caffe", "caffe", "caffe", "lmdb", always_compiled="Caffe's static net", version="1.0",
              optimizer_differences=EPSILON_AFTER_ROOT,
              also_thesis="BVLC Caffe 1.0 is the thesis's release and today's (built from source here, with CUDA 9 "
                          "and cuDNN 7.1 there)"),
    TENSORFLOW,
    Framework("pytorch", "pytorch", "pytorch", "lmdb", launcher="torchrun", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="torch.compile",
              optimizer_differences=EPSILON_AFTER_ROOT, version="2.13.0", released="2026-07-08"),
    Framework("mxnet", "mxnet", "mxnet", "recordio", launcher="ps-lite", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "fp16"),
              always_compiled="Gluon hybridize (static graph)", version="1.9.1",
              released="2022-05-17"),
    Framework("cntk", "cntk", "cntk", "cntk", launcher="mpiexec", always_compiled="CNTK's static graph",
              optimizer_differences=CNTK_RMSPROP, worker="cntk_worker.py", version="2.7",
              released="2019-04-19"),
    Framework("keras-tensorflow", "keras_api", "tensorflow", "lmdb", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="XLA (Keras jit_compile)",
              always_compiled="tf.function graph", runs_on="tensorflow", version="3"),
    Framework("keras-jax", "keras_api", "jax", "lmdb", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), always_compiled="jax.jit (XLA)", version="3.15.1",
              released="2026-07-29"),
    Framework("keras-torch", "keras_api", "pytorch", "lmdb", cpu_precisions=("fp32", "bf16"),
              gpu_precisions=("fp32", "tf32", *MIXED), compiler="torch.compile (Keras jit_compile)",
              runs_on="pytorch", version="3.15.1", released="2026-07-29"),
    Framework("onnxruntime", "onnx_runtime", "pytorch", "lmdb", always_compiled="ONNX Runtime's graph optimisations",
              tasks=("inference",), runs_on="pytorch", version="1.31.1",
              released="2026-10-26"),
    Framework("tensorflow-nn", "tensorflow_nn", "tensorflow", "tfrecord", always_compiled="tf.function graph",
              tasks=("inference",), runs_on="tensorflow", version="2.21.0",
              released="2026-03-06"),
    Framework("cudnn", "cudnn_calls", "pytorch", "lmdb", gpu_precisions=("fp32", "tf32"), tasks=("inference",),
              runs_on="pytorch"),
    # The thesis's releases (its Figure 4.3), where a backend speaks their API: CNTK 2.5.1 through the same worker,
    # MXNet 1.2.0's Gluon, TensorFlow 1.9's graph and session and PyTorch 1.0 (PyPI's oldest; the thesis ran 0.4)
    # each in a worker under its CPython 3.6 (seed 002's raw-op network in TF 1.9's worker too); and seed 001's Keras
    # 2 on each (Keras 2.2.4 on TF 1.9, AWS's keras-mxnet 2.2.4.3 on MXNet 1.2, which Keras 3 has no release of) in one
    # worker, in its backend's environment
    Framework("cntk-2.5", "cntk", "cntk-2.5", "cntk", launcher="mpiexec", always_compiled="CNTK's static graph",
              optimizer_differences=CNTK_RMSPROP, release="thesis", release_of="cntk", worker="cntk_worker.py",
              version="2.5.1", released="2018-04-18"),
    MXNET_1_2,
    Framework("tensorflow-1.9", "tensorflow_worker", "tensorflow-1.9", "tfrecord",
              always_compiled="TF 1's static graph",
              optimizer_differences={"rmsprop": "TF 1's RMSPropOptimizer starts the mean square at 1, not 0 (its first "
                                                "steps are a few times shorter), epsilon inside the square root"},
              release="thesis", release_of="tensorflow", worker="tensorflow_worker.py", version="1.9.0",
              released="2018-07-10"),
    Framework("tensorflow-nn-1.9", "tensorflow_nn_worker", "tensorflow-1.9", "tfrecord",
              always_compiled="TF 1's static graph", tasks=("inference",), runs_on="tensorflow-1.9", release="thesis",
              release_of="tensorflow-nn", worker="tensorflow_worker.py", version="1.9.0",
              released="2018-07-10"),
    Framework("pytorch-1.0", "pytorch_worker", "pytorch-1.0", "lmdb", optimizer_differences=EPSILON_AFTER_ROOT,
              not_yet={"profile": "torch 1.0's autograd profiler gives its events no sequence numbers: a backward op "
                                  "cannot be tied to its layer's forward"},
              release="thesis", release_of="pytorch", worker="pytorch_worker.py", version="1.0.0",
              released="2018-12-07"),
    Framework("keras2-tensorflow", "keras2_worker", "tensorflow-1.9", "tfrecord", always_compiled="TF 1's static graph",
              optimizer_differences=EPSILON_AFTER_ROOT, runs_on="tensorflow-1.9", release="thesis",
              release_of="keras-tensorflow", worker="keras2_worker.py", version="2.2.4", released="2018-10-03"),
    Framework("keras2-mxnet", "keras2_worker", "mxnet-1.2", "recordio",
              always_compiled="keras-mxnet's MXNet symbol (a BucketingModule)",
              not_yet={"profile": "keras-mxnet's profile is not read yet"}, runs_on="mxnet-1.2", release="thesis",
              worker="keras2_worker.py", version="2.2.4.3", released="2020-07-02"),
    # The releases between the thesis's and today's that a backend speaks (release "between"): MXNet's Gluon 1.x
    # through the thesis's MXNet worker, each in an environment of its own on CPython 3.6
    *(replace(MXNET_1_2, name=f"mxnet-{minor}", environment=f"mxnet-{minor}", release="between", version=version,
              released=released, not_yet={"profile": "MXNet 1.4's and 1.6's profiler traces do not map onto the layers "
                                                     "as 1.2's do (105 operators of their types, no complete step): "
                                                     "not read yet"})
      for minor, version, released in (("1.4", "1.4.1", "2019-05-14"), ("1.6", "1.6.0", "2020-02-21"))),
    # TensorFlow's from 2.16, the first whose Keras is Keras 3, through today's TensorFlow backend, each in an
    # environment of its own on the workflow's CPython with today's Keras (the layers are the same code on every point)
    *(replace(TENSORFLOW, name=f"tensorflow-{minor}", environment=f"tensorflow-{minor}", launcher=None,
              release="between", release_of="tensorflow", version=version, released=released)
      for minor, version, released in (("2.16", "2.16.2", "2024-06-28"), ("2.18", "2.18.1", "2025-03-12"))),
)}
FRAMEWORKS = tuple(REGISTRY)
ENVIRONMENTS = {name: framework.environment for name, framework in REGISTRY.items()}


def base_of(name: str) -> str:
    """The framework ``name`` is a release of: itself for today's; for a name the registry does not hold (a merged
    record's, of another dlbench), the name less its release (``mxnet-1.4``: ``mxnet``)."""
    return REGISTRY[name].base if name in REGISTRY else re.sub(r"-\d+(?:\.\d+)*$", "", name)


def version_numbers(version: str) -> tuple[int, ...]:
    """A version's numbers in order, which order a release line (``1.13.1`` after ``1.4.0``)."""
    return tuple(int(number) for number in re.findall(r"\d+", str(version)))


def release_line(base: str) -> list[Framework]:
    """A framework's registered releases, oldest first: its release line."""
    return sorted((entry for entry in REGISTRY.values() if entry.base == base and entry.version),
                  key=lambda entry: version_numbers(entry.version))


def release_named(base: str, version: str) -> Framework | None:
    """The release of ``base`` whose version begins with ``version``'s parts (``1.4``: 1.4.1, not 1.40); None."""
    asked = str(version).split(".")
    return next((entry for entry in release_line(base) if entry.version.split(".")[:len(asked)] == asked), None)


def with_releases(frameworks, releases) -> list[str]:
    """The frameworks a config's ``frameworks`` and ``releases`` name: each framework's registered releases of those
    asked for (current, thesis, between), in the order named, or, where ``releases`` gives a framework its line
    ({mxnet: ["1.2", "1.9"]}), the releases of those versions, oldest first, and today's alone of a framework it
    does not name; or, for :data:`THESIS_TO_TODAY`, each framework's whole line. An older release named itself
    (``cntk-2.5``) stays; Caffe, whose today's release is the thesis's too, stands for either."""
    found = []
    for name in frameworks:
        if REGISTRY[name].release != "current":
            found.append(name)
        elif releases == THESIS_TO_TODAY:
            found += [entry.name for entry in release_line(name)] or [name]
        elif isinstance(releases, dict):
            named = [entry for entry in (release_named(name, version) for version in releases.get(name, ())) if entry]
            found += [entry.name for entry in sorted(named, key=lambda entry: version_numbers(entry.version))] \
                or ([] if name in releases else [name])
        else:
            found += [other for other, entry in REGISTRY.items() if entry.base == name and (
                entry.release in releases or entry.also_thesis and "thesis" in releases)]
    return list(dict.fromkeys(found))


def registry_table() -> str:
    """The registry as docs/environments.md's Markdown table."""
    header = ("framework", "version", "release", "backend module", "environment", "data format", "tasks",
              "over processes", "precisions on CPUs", "on GPUs", "compile: true", "compiled always")
    rows = ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"]
    rows += [f"| `{f.name}` | {f.version or '—'} | {f.release}{f' (of `{f.release_of}`)' if f.release_of else ''} | "
             f"`backends/{f.module}.py` | `{f.environment}` | `{f.data_format}` | {', '.join(f.runs)} | "
             f"{f.launcher or 'no'} | {', '.join(f.cpu_precisions)} | {', '.join(f.gpu_precisions)} | "
             f"{f.compiler or '—'} | {f.always_compiled or '—'} |" for f in REGISTRY.values()]
    return "\n".join(rows)
