"""CNTK backend: the network description translated into a plan of CNTK layer calls, trained by a
worker process under the CPython 3.6 that CNTK 2.7's wheels need (workflow/scripts/workers/cntk_worker.py,
driven as :mod:`dlbench.backends.worker` drives every worker). The worker replies when its step has finished
(it reads the loss back).

On several devices (``gpu2``, ``2xcpu``, ``2xgpu1``) CNTK trains as its examples do: one worker per
device, started by ``mpiexec``, each an MPI rank with a ``data_parallel_distributed_learner`` and its
share of the global batch. Every rank connects to the runner, which sends each the same commands.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import socket
from dataclasses import asdict
from pathlib import Path

from .. import networks
from ..envs import elf
from ..formats import cntk_map
from ..hardware import cluster, gpu
from ..registry import REGISTRY
from ..spec import RunSpec
from . import GpuCode, Unavailable, inputs, worker

# Outside the package: a script's directory comes first on sys.path, where backends/cntk.py would
# shadow the cntk package.
WORKER = worker.WORKERS / REGISTRY["cntk"].worker
MAP_FILE, TEST_MAP_FILE = "train_map.txt", "test_map.txt"
STEP_EVENT = "_Minibatch Iteration"  # a training step's event in CNTK's profiler detail log


def cntk_output_size(size: int, kernel: int, stride: int, autopad: bool, ceil_out_dim: bool = False) -> int:
    """Output length of a CNTK convolution or pooling window (ConvolveGeometry): with automatic
    padding, one output per stride-th input position; without, the windows inside the input."""
    if autopad:
        return math.ceil(size / stride)
    span = size - kernel
    return (math.ceil(span / stride) if ceil_out_dim else span // stride) + 1


def _autopad(layer, shape) -> bool:
    """CNTK's automatic padding centres an odd kernel on every stride-th input position: the
    description's symmetric padding of kernel // 2. CNTK refuses a kernel larger than its input even
    then (VGG16's 3x3 convolutions on CIFAR10's 2x2 maps): those are padded explicitly."""
    return (layer.padding > 0 and layer.kernel % 2 == 1 and layer.padding == layer.kernel // 2
            and layer.kernel <= min(shape[1:]))


def _check_size(layer, shape, autopad: bool, explicit_pad: int = 0, ceil_out_dim: bool = False) -> None:
    described = [networks.window_output_size(n, layer.kernel, layer.stride, layer.padding,
                                             getattr(layer, "ceil_mode", False)) for n in shape[1:]]
    translated = [cntk_output_size(n + 2 * explicit_pad, layer.kernel, layer.stride, autopad, ceil_out_dim)
                  for n in shape[1:]]
    if described != translated:
        raise ValueError(f"{layer} on {shape}: CNTK gives {translated}, the description {described}")


class CntkPlanner(worker.DescriptionPlanner):
    """Turns a :mod:`dlbench.networks` description into a plan: nested JSON nodes, each one CNTK
    call in the worker (Convolution2D, pooling, BatchNormalization, Dense, splice, plus, ...)."""

    def conv(self, layer, shape):
        autopad = _autopad(layer, shape)
        explicit_pad = 0 if autopad else layer.padding  # C.pad with zeros, then an unpadded convolution
        _check_size(layer, shape, autopad, explicit_pad)
        return {"op": "conv", "filters": layer.out_channels, "kernel": layer.kernel, "stride": layer.stride,
                "pad": autopad, "explicit_pad": explicit_pad, "bias": layer.bias}

    def batchnorm(self, layer, shape):
        return {"op": "batchnorm", "epsilon": layer.eps}

    def relu(self, layer, shape):
        return {"op": "relu"}

    def maxpool(self, layer, shape):
        autopad = _autopad(layer, shape)
        if layer.padding and not autopad:  # none of the five networks needs it: padding would be -inf
            raise ValueError(f"max-pooling {layer} has no CNTK padding mode")
        ceil_out_dim = layer.ceil_mode and not autopad
        _check_size(layer, shape, autopad, ceil_out_dim=ceil_out_dim)
        return {"op": "maxpool", "kernel": layer.kernel, "stride": layer.stride, "pad": autopad,
                "ceil_out_dim": ceil_out_dim}

    def globalavgpool(self, layer, shape):
        return {"op": "globalavgpool"}

    def flatten(self, layer, shape):
        return {"op": "flatten"}

    def dense(self, layer, shape):
        return {"op": "dense", "units": layer.out_features, "bias": layer.bias}

    def dropout(self, layer, shape):
        return {"op": "dropout", "rate": layer.rate}

    def lstm(self, layer, shape):
        return {"op": "lstm", "units": layer.units}


def plan(description: networks.Network) -> dict:
    return networks.build(description, networks.Named(CntkPlanner()))


def layer_steps(events: list[dict], layers: dict[str, list[str]]) -> list[dict[str, tuple[float, float]]]:
    """Each step's per-layer (forward, backward) seconds from CNTK's profiler detail log (chrome://tracing
    events: ``B`` and ``E`` of ``<node>Forward`` and ``<node>Backward``, microseconds, inside each step's
    ``_Minibatch Iteration`` on the training thread; an event is written when it ends, so a step's own pair
    follows its nodes'), summed over the primitive nodes of each layer (``layers``: the worker's, in the
    description's order). The parameters', the inputs' and the loss's nodes belong to no layer: their time is
    the unaccounted share."""
    owner = {node: name for name, nodes in layers.items() for node in nodes}
    main = {event["tid"] for event in events if event["name"] == STEP_EVENT}
    opened, spans = {}, []  # (name, start, end), paired by name on the training thread
    for event in (event for event in events if event["tid"] in main):
        if event["ph"] == "B":
            opened[event["name"]] = event["ts"]
        elif event["ph"] == "E":
            spans.append((event["name"], opened.pop(event["name"]), event["ts"]))
    steps = sorted((start, end) for name, start, end in spans if name == STEP_EVENT)
    times = [{layer: [0.0, 0.0] for layer in layers} for _ in steps]
    for name, start, end in spans:
        for phase, suffix in enumerate(("Forward", "Backward")):
            node = name[:-len(suffix)] if name.endswith(suffix) else None
            within = [k for k, (first, last) in enumerate(steps) if first <= start and end <= last]
            if node in owner and within:
                times[within[0]][owner[node]][phase] += (end - start) / 1e6
    return [{layer: tuple(seconds) for layer, seconds in step.items()} for step in times]


def gpu_code() -> GpuCode | str:
    """The GPU code in the fatbinary of CNTK's math library, in the worker's environment (CNTK does not report
    what it was compiled for; its core library carries the same), and the run's GPUs as NVML lists them."""
    environment = Path(worker.worker_python("cntk")).parent.parent
    libraries = next(environment.glob("lib/python3*/site-packages/cntk/libs"), environment)
    math_library = next(libraries.glob("libCntk.Math-*.so"), None)
    if math_library is None:
        return f"no CNTK math library (libCntk.Math-*.so) in {environment}"
    runtime = next(libraries.glob("libcudart.so.*"), None)  # the CUDA it bundles, by its name: libcudart.so.10.0
    cuda = runtime.name.removeprefix("libcudart.so.") if runtime else None
    release = math_library.name.removeprefix("libCntk.Math-").removesuffix(".so")  # libCntk.Math-2.7.so: 2.7
    return GpuCode.from_arch_names(f"CNTK {release}", cuda, elf.fatbin_architectures(math_library),
                                   gpu.visible_gpus())


def describe() -> dict:
    """The worker interpreter's Python, CNTK and numpy versions, for the run's record."""
    return worker.describe(worker.worker_python("cntk"), WORKER, "cntk")


def ranks(spec: RunSpec) -> int:
    """CNTK's data-parallel training has one process (an MPI rank) per device."""
    return spec.processes * max(spec.gpus, 1)


def _across_nodes(spec: RunSpec) -> bool:
    return cluster.local_processes(spec.device) < spec.processes


def worker_config(spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
    count = ranks(spec)
    config = {"plan": plan(description), "input_shape": list(description.input_shape),
              "stored_shape": list(inputs.stored_shape(spec, description)),
              "num_classes": description.num_classes, "batch_size": spec.batch_size_global, "ranks": count,
              "learning_rate": spec.learning_rate, "optimizer": asdict(networks.optimizer(spec.network)),
              "threads": max(1, spec.threads // count), "gpus": spec.gpus, "profile": spec.task == "profile",
              "synthetic_images": None, "synthetic_labels": None, "input_scale": None,
              "map_file": None, "test_map_file": None, "mean_file": None,
              # CNTK's image reader decodes on as many threads as the machine has cores unless told otherwise: on a
              # CPU run (no loader workers) that burst took the cores the step trains on, and the steps it hit ran
              # 2 to 6 times their median (CHANGELOG 0.48.0); one decoding thread, prefetching beside the step
              "multithreaded_reader": spec.loader_workers > 0}
    if spec.data_mode == "synthetic":
        return {**config, **worker.synthetic_batch_files(spec, description, scratch)}
    data = Path(spec.data_dir).absolute()
    if not (data / MAP_FILE).exists():
        raise FileNotFoundError(f"{data / MAP_FILE} is missing (is the dataset converted to the cntk format?)")
    _, std = inputs.pixel_statistics(spec)
    # CNTK's reader subtracts the mean image; the graph divides by std, per channel in OpenCV's BGR order.
    config.update(map_file=str(data / MAP_FILE), test_map_file=str(data / TEST_MAP_FILE),
                  mean_file=str(data / cntk_map.MEAN_FILE),
                  input_scale=[float(1 / value) for value in std[::-1]])
    return config


class LayerProfiler:
    METHOD = ("CNTK's profiler with per-node timing (C.debugging.set_node_timing, start_profiler with sync_gpu; its "
              "chrome://tracing detail log): each primitive node's Forward and Backward events summed by the layer "
              "whose CNTK call made it (the primitives, blocks' insides too, between the layer's input and output: "
              "C.logging.graph.depth_first_search); parameters', inputs' and the loss's nodes count for no layer")

    layer_updates = update = None
    update_untimed = "dlbench reads CNTK's node timing, and the learner's update is no node of the network"

    def __init__(self, harness: Harness, names: list[str]):
        self.harness, self.names, self.steps = harness, names, []
        self.all_reduce = self.devices = None  # its detail log has no event of the MPI all-reduce

    def __enter__(self):
        self.harness.synchronize()
        self.harness.command_all("profile start")
        return self

    def __exit__(self, *exception) -> None:
        self.harness.synchronize()
        devices = [self._steps(stopped) for stopped in self.harness.command_all("profile stop")]
        self.steps = devices[0]
        if len(devices) > 1:  # each rank's own detail log
            self.devices = devices

    def _steps(self, stopped: dict) -> list[dict[str, tuple[float, float]]]:
        if set(stopped["layers"]) != set(self.names):  # the worker builds a shortcut before its residual's body
            raise RuntimeError(f"the CNTK worker's layers {sorted(stopped['layers'])} are not the description's "
                               f"{sorted(self.names)}")
        return layer_steps(json.loads(Path(stopped["trace"]).read_text()),
                           {name: stopped["layers"][name] for name in self.names})


class Harness(worker.WorkerHarness):
    INFERENCE_IDIOM = "model.eval(batch) in the CNTK worker (each call includes the runner's socket round trip)"
    FRAMEWORK, SCRIPT = "CNTK", WORKER

    def __init__(self, spec: RunSpec, description: networks.Network):
        self.layer_names = networks.layer_names(description)
        super().__init__(spec, description)

    worker_config = staticmethod(worker_config)

    def command_line(self, python: str, spec: RunSpec, config_path: Path, address: str) -> tuple[list[str], int]:
        """On several devices, one rank per device under ``mpiexec``."""
        command, _ = super().command_line(python, spec, config_path, address)
        count = ranks(spec)
        if count == 1:
            return command, count
        # conda's cntk environment brings its own OpenMPI; a pip one links the system's (dlbench.envs.cntk_setup)
        beside = Path(python).parent / "mpiexec"
        mpiexec = str(beside) if beside.exists() else shutil.which("mpiexec")
        if mpiexec is None:
            raise Unavailable(f"{spec.device}: CNTK's data-parallel learner runs under MPI, and there is no mpiexec "
                              f"beside {python} or on PATH (Debian: openmpi-bin)")
        # The ranks keep the cores the run holds (inherited affinity) rather than OpenMPI's binding; OpenMPI
        # counts the machine's cores, not those held, when it refuses more ranks than cores.
        # Over the nodes of a Slurm allocation, OpenMPI starts its daemons there with srun; each node its share.
        across = ["--map-by", f"ppr:{count // spec.nodes}:node"] if _across_nodes(spec) else []
        return [mpiexec, "-n", str(count), *across, "--bind-to", "none", "--oversubscribe", *command], count

    def listener(self, spec: RunSpec, name: str) -> tuple[socket.socket, str]:
        """For ranks on other nodes, TCP on the address this machine has towards the allocation's first node."""
        if not _across_nodes(spec):
            return super().listener(spec, name)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind((cluster.address_towards(cluster.first_node(os.environ["SLURM_JOB_NODELIST"])), 0))
        host, port = listener.getsockname()
        return listener, f"tcp:{host}:{port}"

    def _start(self, spec: RunSpec, description: networks.Network, python: str, scratch: Path) -> None:
        super()._start(spec, description, python, scratch)
        if len(self.hellos) > 1:
            print(f"CNTK: {len(self.hellos)} ranks, batch {self.hellos[0]['batch']} each", flush=True)
            hosts = ", ".join(hello["host"] for hello in sorted(self.hellos, key=lambda hello: hello["rank"]))
            self.data_parallel = (f"data_parallel_distributed_learner over {len(self.hellos)} MPI ranks on {hosts}: "
                                  "gradients all-reduced by CNTK's MPI communicator")

    def layer_profiler(self) -> LayerProfiler:
        return LayerProfiler(self, self.layer_names)
