"""Harness overhead: the workflow's images/s vs. a bare minimal training loop in the same framework.

Same network (the same builder), batch, threads and synthetic data. Two measurements:

- end to end: the workflow's run (monitor, runner, backend) and the bare loop, each in a fresh
  process with the framework's interpreter, in A-B-B-A order so that the machine's drift hits
  both; the median of the pairwise ratios, their interquartile range and the runs' CPU/wall.
- in one process (``--interleaved``): the backend's harness under the runner's timed loop and the
  bare loop take turns every ``--timed`` steps, so drift slower than a few seconds cancels out (this
  machine's speed changes 1.5x between processes, which separate runs cannot tell from the harness's cost);
  during the harness's turns the monitor's sampler reads this process from a process of its own, as it
  reads a workflow's runner (:class:`dlbench.hardware.sampler.Sampler`, at its rate for the run's device), so a turn
  costs what a workflow run costs beside its monitor. Each round also has two turns of the harness with
  the sampler off: the second measurement splits the harness's cost into its step path's and the sampler's;
  and two of the harness's steps outside the timed loop (no clock, no wait for each step), against which the
  third measurement gives the timed loop's own cost: the bare loops are each framework's tutorial step, and
  the harness's step can outrun one (TensorFlow's called as its concrete function, MXNet's loss in its
  hybridised graph), which the first measurement does not tell from the loop's cost.

The bare loop synchronises once, at its end; the workflow times every step: it waits for each (with the next one
already dispatched), or, where the engine stamps each step's completion (MXNet's), for the steps at its progress lines.
Goal: ratio >= 0.98.

    .venv/bin/python benchmarks/framework_overhead.py --network resnet50 --dataset cifar10 --batch 16
    .venv/bin/python benchmarks/framework_overhead.py --framework mxnet --network lenet --dataset mnist --batch 64 \
        --interleaved
    python3 benchmarks/framework_overhead.py --device cuda --network resnet50 --dataset cifar10 --batch 128

On a GPU (``--device cuda``, PyTorch) the bare loop runs on the first visible GPU and waits for it once, at
its end; the workflow's run holds a GPU as any run does.
"""
import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "workflow" / "scripts"))

from dlbench.checks import bench
from dlbench.run import monitor
from dlbench.spec import RunSpec

FRAMEWORKS = ("pytorch", "tensorflow", "mxnet", "caffe")

# Each loop defines step() and finish() on one resident batch; the common tail times it.
BARE_LOOPS = {
    "pytorch": """
import torch
from dlbench.backends.pytorch import build, memory_format
from dlbench.spec import RunSpec
torch.set_num_threads({threads})
device = torch.device({device!r})
# the layout the backend picks (channels_last on CPUs): the same math, not NCHW's slower kernels
layout = memory_format(RunSpec("pytorch", "{dataset}-synthetic", {network!r}, {run_device!r}, 1, {batch}, 0, 0, 0.01,
                               {threads}), description)
model = build(description).train().to(device, memory_format=layout)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
images = torch.randn({batch}, *description.input_shape, device=device).contiguous(memory_format=layout)
labels = torch.randint(0, description.num_classes, ({batch},), device=device)
def step():
    optimizer.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(model(images), labels).backward()
    optimizer.step()
def finish():
    if device.type == "cuda":
        torch.cuda.synchronize()
""",
    "tensorflow": """
import tensorflow as tf
from dlbench.backends.tensorflow import build
tf.config.threading.set_intra_op_parallelism_threads({threads})
tf.config.threading.set_inter_op_parallelism_threads({threads})
model = build(description)
optimizer = tf.keras.optimizers.SGD(0.01, momentum=0.9)
channels, height, width = description.input_shape
images = tf.random.normal(({batch}, height, width, channels))
labels = tf.random.uniform(({batch},), 0, description.num_classes, dtype=tf.int64)
@tf.function
def train():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, model(images, training=True)))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss
losses = []
def step():  # keeps the last step's loss: finish() waits for it rather than running a step more
    losses[:] = [train()]
def finish():
    losses[0].numpy()
""",
    "mxnet": """
import mxnet as mx
from mxnet import autograd, gluon
from dlbench.backends.mxnet import build
net = build(description)
net.initialize(mx.init.Xavier())
net.hybridize(static_alloc=True, static_shape=True)
trainer = gluon.Trainer(net.collect_params(), "sgd", {{"learning_rate": 0.01, "momentum": 0.9}})
criterion = gluon.loss.SoftmaxCrossEntropyLoss()
images = mx.nd.random.normal(shape=({batch}, *description.input_shape))
labels = mx.nd.random.randint(0, description.num_classes, shape=({batch},)).astype("float32")
def step():
    with autograd.record():
        loss = criterion(net(images), labels)
    loss.backward()
    trainer.step({batch})
def finish():
    mx.nd.waitall()
""",
    # The backend generates the prototxt (net on resident Input blobs, solver); the loop is pycaffe's.
    "caffe": """
from dlbench.backends.caffe import Harness
from dlbench.spec import RunSpec
solver = Harness(RunSpec("caffe", "{dataset}-synthetic", {network!r}, "cpu", 1, {batch}, 0, 0, 0.01, {threads}),
                 description).solver
def step():
    solver.step(1)
def finish():
    pass
""",
}
TIMED_TAIL = """
import time
for _ in range({warmup}):
    step()
finish()
start = time.perf_counter()
for _ in range({timed}):
    step()
finish()
print({batch} * {timed} / (time.perf_counter() - start))
"""
# The backend's harness is built first: it configures the framework's threads before first use.
INTERLEAVED_HEAD = """
from dlbench import backends
from dlbench.spec import RunSpec
spec = RunSpec({framework!r}, "{dataset}-synthetic", {network!r}, {run_device!r}, 1, {batch}, 0, 0, 0.01, {threads})
backend_harness = backends.load({framework!r}).Harness(spec, description)
"""
INTERLEAVED_TAIL = """
import json, os, subprocess, time
from dlbench.tasks.loop import timed_loop
# The monitor's sampler, in a process of its own with the workflow's interpreter, on during the harness's turns
sampler = subprocess.Popen([{monitor_python!r}, "-c", {sampler_sidecar!r}], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True, env={{**os.environ, "PYTHONPATH": {package_root!r}}})
os.environ.update(json.loads(sampler.stdout.readline()))  # where the timed loop marks its window, as a runner's
def sampling(on):  # returns once the side-car has started (its first sample taken) or stopped sampling
    sampler.stdin.write("on\\n" if on else "off\\n")
    sampler.stdin.flush()
    sampler.stdout.readline()
def bare(steps, step=step, finish=finish):  # the bare loop's turn, or other steps' without a clock
    start = time.perf_counter()
    for _ in range(steps):
        step()
    finish()
    return time.perf_counter() - start
def harness(steps, sampled=True):
    sampling(sampled)
    seconds = timed_loop(backend_harness, steps, 0, progress=lambda *args, **kwargs: None)["timed_window"]["seconds"]
    sampling(False)
    return seconds
def untimed(steps):  # the harness's steps without the timed loop: no clock, no wait for each step
    return bare(steps, backend_harness.step, backend_harness.synchronize)
bare({warmup}), harness({warmup})
ratios = {{"sampled": [], "unsampled": [], "clocked": []}}
for _ in range({rounds}):  # A B C D D C B A: each pair of turns mirrored about the round's middle
    sampled, unsampled, untimed_first = harness({timed}), harness({timed}, sampled=False), untimed({timed})
    bare_first, bare_second = bare({timed}), bare({timed})
    untimed_second, unsampled_second = untimed({timed}), harness({timed}, sampled=False)
    sampled_second = harness({timed})
    ratios["sampled"] += [bare_first / sampled, bare_second / sampled_second]
    ratios["unsampled"] += [bare_first / unsampled, bare_second / unsampled_second]
    ratios["clocked"] += [untimed_first / unsampled, untimed_second / unsampled_second]
sampler.stdin.close()
sampler.wait()
print(json.dumps(ratios))
"""
# Reads its parent, the interleaved loops' process, as the monitor reads a runner (on its clock and on the timed loop's
# window marks), while told "on"; says when it has started (its first sample, with the process tree's scan, taken) or
# stopped: a workflow's monitor starts sampling before its runner starts, so its start-up is no timed window's
SAMPLER_SIDECAR = """
import json, os, sys, tempfile, time
from pathlib import Path
from dlbench.hardware import host
from dlbench.tasks import window_marks
from dlbench.hardware.gpu import GpuProbe
from dlbench.hardware.sampler import Sampler
scratch = tempfile.TemporaryDirectory()
marks = window_marks.Listener(Path(scratch.name, "window-marks"))
print(json.dumps(marks.environment), flush=True)
sampler = None
for line in sys.stdin:
    if line.strip() == "on":
        sampler = Sampler(os.getppid(), GpuProbe([]), SAMPLE_HZ, sorted(os.sched_getaffinity(0)), host.Rapl(), marks)
        sampler.start()
        while not sampler.ticks:
            time.sleep(0.001)
    elif sampler:
        sampler.stop()
        sampler = None
    print(line.strip(), flush=True)
"""

HEAD = """
from dlbench.networks import network
description = network({network!r}, {dataset!r})
"""


RUN_DEVICES = {"cpu": "cpu", "cuda": "gpu1"}  # --device: the workflow run's device
INTERLEAVED_QUANTITY = "harness ÷ bare loop (one process, interleaved, the monitor sampling the harness's turns)"
# The same turns without the sampler: what the harness's step path costs apart from the monitor beside it
UNSAMPLED_QUANTITY = "harness without the monitor's sampler ÷ bare loop (one process, interleaved)"
# The timed loop's own cost (a clock read and, for an asynchronous step, a wait for each step) on the harness's step:
# the bare loops are each framework's tutorial step, which the harness's may outrun (a loss in the compiled graph)
CLOCKED_QUANTITY = "harness in the timed loop ÷ its steps unclocked (one process, interleaved, no sampler)"
SAMPLE_HZ = 20  # measurement.sample_hz's default: a CPU run's host rate follows from it


def workflow_rate(args, scratch: Path) -> tuple[float, float, float | None]:
    """The workflow run's images/s, CPU/wall and contention share."""
    spec = RunSpec(args.framework, f"{args.dataset}-synthetic", args.network, args.run_device, 1, args.batch,
                   args.warmup + args.timed, args.warmup, 0.01, args.threads)
    record = monitor.run(spec, bench.framework_python(args.framework), scratch / "run.log", 3600, SAMPLE_HZ,
                         "benchmark")
    if record["status"] != "ok":
        raise SystemExit(record["reason"])
    timing = record["timing"]
    return timing["images_per_second_mean"], timing["cpu_per_wall"], timing["contention_share"]


def _bare_environment(args) -> dict:
    return monitor.runner_environment(args.threads, gpus=["0"] if args.device == "cuda" else [])


def _run_bare(args, code: str) -> str:
    """The last line a bare loop printed, run in the framework's environment."""
    out = subprocess.run([bench.framework_python(args.framework), "-c", code], capture_output=True, text=True,
                         check=True, env=_bare_environment(args))
    return out.stdout.strip().splitlines()[-1]


def bare_rate(args) -> float:
    return float(_run_bare(args, (HEAD + BARE_LOOPS[args.framework] + TIMED_TAIL).format(**vars(args))))


def interleaved_ratios(args) -> dict[str, list[float]]:
    """Each pair's ratio, of the harness's turns with the monitor's sampler on ("sampled") and off ("unsampled"),
    and of its steps outside the timed loop to its turns without the sampler ("clocked")."""
    sidecar = SAMPLER_SIDECAR.replace("SAMPLE_HZ", str(SAMPLE_HZ))
    code = (HEAD + INTERLEAVED_HEAD + BARE_LOOPS[args.framework] + INTERLEAVED_TAIL).format(
        **vars(args), monitor_python=sys.executable, sampler_sidecar=sidecar,
        package_root=str(ROOT / "workflow" / "scripts"))
    return json.loads(_run_bare(args, code))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--framework", default="pytorch", choices=FRAMEWORKS)
    parser.add_argument("--network", default="resnet50")
    parser.add_argument("--dataset", default="cifar10", help="the dataset family the network is sized for")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", choices=RUN_DEVICES, help="cuda: PyTorch on the first GPU")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--timed", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=4, help="ABBA rounds; each gives two pairs")
    parser.add_argument("--interleaved", action="store_true", help="both loops in one process, taking turns")
    args = parser.parse_args()
    if args.device == "cuda" and args.framework != "pytorch":
        parser.error("--device cuda: the bare loop on a GPU is PyTorch's only")
    args.run_device = RUN_DEVICES[args.device]
    case = f"{args.network}/{args.dataset}, batch {args.batch}, {args.device}, {args.threads} threads"
    if args.interleaved:
        ratios = interleaved_ratios(args)
        measurements = [bench.Measurement("framework_overhead", INTERLEAVED_QUANTITY, args.framework, case,
                                          ratios["sampled"], goal=">= 0.98", bound=1.0),
                        bench.Measurement("framework_overhead", UNSAMPLED_QUANTITY, args.framework, case,
                                          ratios["unsampled"], bound=1.0),
                        bench.Measurement("framework_overhead", CLOCKED_QUANTITY, args.framework, case,
                                          ratios["clocked"], bound=1.0)]
    else:
        workflow, bare, contention, cpu = [], [], [], []
        with tempfile.TemporaryDirectory() as scratch:
            for round_ in range(args.rounds):
                # A B B A: a slow drift of the machine's speed hits both sides equally.
                first = workflow_rate(args, Path(scratch))
                bare_first, bare_second = bare_rate(args), bare_rate(args)
                second = workflow_rate(args, Path(scratch))
                workflow += [first[0], second[0]]
                bare += [bare_first, bare_second]
                cpu += [first[1], second[1]]
                contention += [first[2], second[2]]
                print(f"round {round_ + 1}: workflow {first[0]:.1f}, {second[0]:.1f} img/s (CPU/wall {first[1]:.2f}, "
                      f"{second[1]:.2f}); bare loop {bare_first:.1f}, {bare_second:.1f} img/s", flush=True)
        measurements = [bench.Measurement("framework_overhead", "harness ÷ bare loop (separate processes)",
                                          args.framework, case, [w / b for w, b in zip(workflow, bare)],
                                          goal=">= 0.98", sides={"workflow": workflow, "bare loop": bare},
                                          contention_shares=contention, bound=1.0)]
    for measurement in measurements:
        print(bench.line(measurement))
    bench.emit(measurements)


if __name__ == "__main__":
    main()
