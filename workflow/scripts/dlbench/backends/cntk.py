"""CNTK backend: the network description translated into a plan of CNTK layer calls, trained by a
worker process under the CPython 3.6 that CNTK 2.7's wheels need (workflow/scripts/workers/cntk_worker.py).

The runner stays on the workflow's Python and drives the worker over two pipes: ``step()`` sends
one command and returns a callable that reads the step's reply, so the next command is queued
while a step runs (one step in flight, as the other backends). The worker replies when its step
has finished (it reads the loss back). Its interpreter is the cntk environment's, passed in
``DLBENCH_WORKER_PYTHON`` by the monitor, else ``python3.6`` on PATH.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from .. import envs, networks
from ..formats import cntk_map
from ..spec import RunSpec
from . import Unavailable, inputs

# Outside the package: a script's directory comes first on sys.path, where backends/cntk.py would
# shadow the cntk package.
WORKER = Path(__file__).resolve().parents[2] / "workers" / "cntk_worker.py"
MAP_FILE = "train_map.txt"


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


class CntkPlanner:
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

    def sequential(self, children):
        return {"op": "sequential", "children": children}

    def concat(self, branches):
        return {"op": "concat", "branches": branches}

    def residual(self, body, shortcut):
        return {"op": "residual", "body": body, "shortcut": shortcut}


def plan(description: networks.Network) -> dict:
    return networks.build(description, CntkPlanner())


def worker_python() -> str:
    python = os.environ.get(envs.WORKER_PYTHON_VARIABLE)
    if python:
        return python
    try:
        return envs.find_worker_python("cntk")
    except LookupError as error:
        raise Unavailable(str(error)) from error


def describe() -> dict:
    """The worker interpreter's Python, CNTK and numpy versions, for the run's record."""
    found = subprocess.run([worker_python(), str(WORKER), "--describe"], check=False, capture_output=True,
                           text=True)
    if found.returncode != 0:
        raise Unavailable(f"cntk cannot be imported: {(found.stderr.strip().splitlines() or ['?'])[-1]}")
    return json.loads(found.stdout.splitlines()[-1])


def worker_config(spec: RunSpec, description: networks.Network, scratch: Path) -> dict:
    config = {"plan": plan(description), "input_shape": list(description.input_shape),
              "num_classes": description.num_classes, "batch_size": spec.batch_size_global,
              "learning_rate": spec.learning_rate, "threads": spec.threads, "gpus": spec.gpus,
              "synthetic_images": None, "synthetic_labels": None, "input_scale": None,
              "map_file": None, "mean_file": None}
    if spec.data_mode == "synthetic":
        images, labels = inputs.normalised_synthetic_batch(spec, description)
        config.update(synthetic_images=str(scratch / "images.npy"), synthetic_labels=str(scratch / "labels.npy"))
        np.save(config["synthetic_images"], images)
        np.save(config["synthetic_labels"], labels)
        return config
    data = Path(spec.data_dir).absolute()
    if not (data / MAP_FILE).exists():
        raise FileNotFoundError(f"{data / MAP_FILE} is missing (is the dataset converted to the cntk format?)")
    _, std = inputs.pixel_statistics(spec)
    # CNTK's reader subtracts the mean image; the graph divides by std, per channel in OpenCV's BGR order.
    config.update(map_file=str(data / MAP_FILE), mean_file=str(data / cntk_map.MEAN_FILE),
                  input_scale=[float(1 / value) for value in std[::-1]])
    return config


class Trainer:
    def __init__(self, spec: RunSpec, description: networks.Network):
        python = worker_python()
        print(f"CNTK worker: {python} {WORKER}", flush=True)
        self.scratch = tempfile.TemporaryDirectory(prefix="dlbench-cntk-")
        config_path = Path(self.scratch.name, "worker.json")
        config_path.write_text(json.dumps(worker_config(spec, description, Path(self.scratch.name))))
        command_read, command_write = os.pipe()
        reply_read, reply_write = os.pipe()
        # The map file's image paths are relative to the format directory: CNTK opens them from there.
        self.process = subprocess.Popen(
            [python, str(WORKER), str(config_path), str(command_read), str(reply_write)],
            pass_fds=(command_read, reply_write), cwd=spec.data_dir or self.scratch.name)
        os.close(command_read)
        os.close(reply_write)
        self.commands, self.replies = os.fdopen(command_write, "w"), os.fdopen(reply_read)
        self.pending = 0
        hello = self._reply()
        if "unavailable" in hello:
            raise Unavailable(hello["unavailable"])
        expected = networks.trainable_parameters(description)
        if hello["parameters"] != expected:
            raise RuntimeError(f"the CNTK {description.name} has {hello['parameters']:,} trainable parameters, "
                               f"the description {expected:,}")

    def _worker_exited(self) -> RuntimeError:
        return RuntimeError(f"the CNTK worker exited with code {self.process.wait()} (its error is in the log)")

    def _send(self, command: str) -> None:
        try:
            self.commands.write(command + "\n")
            self.commands.flush()
        except BrokenPipeError:  # it died before reading: the same failure as a reply that never comes
            raise self._worker_exited() from None

    def _reply(self) -> dict:
        line = self.replies.readline()
        if not line:
            raise self._worker_exited()
        return json.loads(line)

    def _wait_for_oldest_step(self) -> None:
        self._reply()
        self.pending -= 1

    def step(self):
        self._send("step")
        self.pending += 1
        return self._wait_for_oldest_step

    def synchronize(self) -> None:
        while self.pending:
            self._wait_for_oldest_step()

    def final_loss(self) -> float | None:
        self.synchronize()
        self._send("loss")
        return self._reply()["loss"]

    def worker_cpu_seconds(self) -> float:
        """The worker's CPU time (user + system, from /proc), which the runner's own does not include."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def allocator_peak_mib(self) -> None:
        return None  # CNTK keeps no allocator statistics that its Python API exposes
