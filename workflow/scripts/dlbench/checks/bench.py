"""The project's own yardsticks (``make bench``): what each benchmark measured, summarised with its spread.

Every script in ``benchmarks/`` ends its output with one line, ``{"measurements": [...]}`` (:func:`emit`),
each a :class:`Measurement`: the values of its rounds (a ratio per A-B pair, a rate per round), the rates
a ratio was taken from, per side, and the contention share of each monitored run. :func:`table_row` turns
one into a table row: median and interquartile range, and a verdict on whether the rounds agreed. Rounds
that disagree are "unsteady", never a clean figure: on a shared machine one side's rate can change 20x
between rounds, and a ratio of such rates measures the neighbours.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

STEADY_SPREAD = 0.10  # the values' interquartile range ÷ median (a share's: the range itself) beyond this
STEADY_RATE_SPAN = 1.5  # one side's fastest ÷ slowest run beyond this: the machine's speed changed under it
BOUND_MARGIN = 0.05  # a median this far past the most a value can be: the two sides differ, a bug to find


@dataclass
class Measurement:
    benchmark: str  # the script's name
    quantity: str  # what a value is: "harness ÷ bare loop", "conversion images/s on one core", ...
    framework: str
    case: str  # network, dataset, batch, device, threads
    values: list[float]  # one per round or pair
    goal: str = ""  # ">= 0.98"; empty where the quantity has none
    sides: dict[str, list[float]] = field(default_factory=dict)  # a ratio's rates, per side, each run's
    contention_shares: list[float | None] = field(default_factory=list)  # each monitored run's (dlbench.hardware.host)
    share: bool = False  # a value is a share of a whole (0 to 1): its spread is judged on the whole, not the median
    bound: float | None = None  # the most a value can be (harness ÷ bare loop: 1, the harness does more work)


def framework_python(framework: str) -> str:
    """The interpreter a benchmark runs ``framework``'s runner with: this one for PyTorch (the project's .venv has
    it), else the framework's environment as the workflow builds it (:func:`built_environment`)."""
    python, missing = find_framework_python(framework)
    if python is None:
        raise SystemExit(missing)
    return python


def find_framework_python(framework: str) -> tuple[str | None, str]:
    """:func:`framework_python`, or None and why there is none."""
    from ..paths import PROJECT_ROOT
    from ..registry import REGISTRY

    environment = REGISTRY[framework].environment
    if environment == "pytorch":
        return sys.executable, ""
    found = built_environment(environment, PROJECT_ROOT)
    if found is None or found["status"] != "ok":
        return None, (f"{environment}'s environment is not built here ({found['reason'] if found else 'no build'}): "
                      f"the workflow builds it for a run of {framework} (make run, or "
                      f"snakemake .venvs/{environment}/environment.json)")
    return found["python"], ""


def built_environment(environment: str, checkout: Path) -> dict | None:
    """The status of ``environment`` as built for the workflow in ``checkout``: the record its framework_venv job
    left (``.venvs/<environment>/environment.json``), else the build shared under the machine's root
    (:func:`dlbench.envs.shared_build`) from the checkout's requirements file for this node; None where neither
    was built."""
    from .. import envs

    record = checkout / ".venvs" / environment / "environment.json"
    if record.exists():
        return envs.status(record)
    root = envs.shared_root()
    if root is None:
        return None
    requirements, _ = envs.choose_requirements(checkout / "envs" / f"{environment}.requirements.txt",
                                               envs.node_gpus(), envs.node_compute_capabilities(), envs.node_driver())
    try:
        shared = root / f"{environment}-{envs.environment_key(environment, requirements)}" / envs.SHARED_STATUS
    except (LookupError, OSError, subprocess.CalledProcessError):
        return None
    if not shared.exists():
        return None
    found = json.loads(shared.read_text())
    # a worker environment's runner runs on the workflow's interpreter, whichever built it
    return {**found, "python": sys.executable} if found.get("worker_python") else found


def emit(measurements: list[Measurement]) -> None:
    """A benchmark's last output line: what ``make bench`` reads back."""
    print(json.dumps({"measurements": [asdict(measurement) for measurement in measurements]}), flush=True)


def read(output: str) -> list[Measurement]:
    """The measurements of a benchmark's output (its last line, :func:`emit`'s)."""
    lines = output.strip().splitlines()
    if not lines:
        raise ValueError("the benchmark printed nothing")
    return [Measurement(**measurement) for measurement in json.loads(lines[-1])["measurements"]]


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    first, _, third = statistics.quantiles(values, n=4, method="inclusive")
    return first, third


def steadiness(measurement: Measurement) -> str:
    """"steady", or why the rounds cannot be taken as one figure: they disagree, or agree on a value that cannot be."""
    values = measurement.values
    if len(values) < 2:
        return "unsteady: one round, no spread to judge"
    first, third = _quartiles(values)
    median = statistics.median(values)
    reasons, scale = [], 1.0 if measurement.share else abs(median)
    if scale and (third - first) / scale > STEADY_SPREAD:
        reasons.append(f"the rounds' values spread {(third - first) / scale:.0%} of the "
                       f"{'whole' if measurement.share else 'median'} "
                       f"(interquartile range; at most {STEADY_SPREAD:.0%})")
    for side, rates in measurement.sides.items():
        if rates and min(rates) > 0 and max(rates) / min(rates) > STEADY_RATE_SPAN:
            reasons.append(f"{side}'s runs span {min(rates):.4g}–{max(rates):.4g} ({max(rates) / min(rates):.1f}x; "
                           f"at most {STEADY_RATE_SPAN}x)")
    if reasons:
        return "unsteady: " + "; ".join(reasons)
    if measurement.bound is not None and median > measurement.bound * (1 + BOUND_MARGIN):
        return (f"implausible: {median:.3g} is over {measurement.bound:g}, the most it can be: the two sides do not "
                "do the same work (a bug to find, not a figure)")
    return "steady"


def goal_met(measurement: Measurement, verdict: str) -> str:
    """Whether the median meets the goal: judged only on steady rounds."""
    if not measurement.goal:
        return ""
    if verdict != "steady":
        return f"cannot tell ({verdict.partition(':')[0]})"
    sense, _, bound = measurement.goal.partition(" ")
    median = statistics.median(measurement.values)
    met = median >= float(bound) if sense == ">=" else median <= float(bound)
    return "met" if met else "missed"


def table_row(measurement: Measurement) -> dict:
    """One row of the benchmarks' table."""
    first, third = _quartiles(measurement.values)
    shares = [share for share in measurement.contention_shares if share is not None]
    verdict = steadiness(measurement)
    return {"benchmark": measurement.benchmark, "framework": measurement.framework, "case": measurement.case,
            "quantity": measurement.quantity, "median": statistics.median(measurement.values),
            "q1": first, "q3": third, "rounds": len(measurement.values), "verdict": verdict,
            "goal": measurement.goal, "goal_met": goal_met(measurement, verdict),
            "contention_median": statistics.median(shares) if shares else None,
            "contention_max": max(shares) if shares else None,
            "values": json.dumps([round(value, 4) for value in measurement.values])}


def line(measurement: Measurement) -> str:
    """A benchmark's closing words for one measurement, as a person reads them."""
    row = table_row(measurement)
    contention = "" if row["contention_max"] is None else \
        f"; contention share {row['contention_median']:.2f} (max {row['contention_max']:.2f})"
    goal = f"; goal {row['goal']}: {row['goal_met']}" if row["goal"] else ""
    return (f"{row['framework']} {row['case']}: {row['quantity']} {row['median']:.4g} "
            f"[{row['q1']:.4g}, {row['q3']:.4g}] over {row['rounds']} round(s), {row['verdict']}{goal}{contention}")


@dataclass(frozen=True)
class Job:
    script: str  # in benchmarks/
    arguments: tuple[str, ...]
    framework: str = "pytorch"  # whose environment it needs: a framework of its own venv (.venvs/<name>)


_LENET = ("--network", "lenet")
# What `make bench` runs, per device: each benchmark at sizes that measure (on a 2-core CPU, about 25 minutes
# in all), and at tiny ones that only show it runs (`--smoke`, the tests').
PLANS = {
    "cpu": [
        # The goal's yardstick: the harness and the bare loop in one process, taking turns (this VM's speed changes
        # up to 1.6x between processes, far more than the 2 % asked of the harness); end to end below.
        *(Job("framework_overhead.py", ("--framework", name, *_LENET, "--dataset", "mnist", "--batch", "64",
                                        "--timed", "200", "--rounds", "6", "--interleaved"), name)
          for name in ("pytorch", "tensorflow", "mxnet", "caffe")),
        Job("framework_overhead.py", ("--network", "resnet50", "--dataset", "cifar10", "--batch", "16",
                                      "--warmup", "5", "--timed", "20", "--rounds", "2")),
        *(Job("input_pipeline.py", ("--framework", name, "--family", "mnist", *_LENET, "--batch", "64", "--timed",
                                    "100", "--rounds", "3"), name) for name in ("pytorch", "mxnet")),
        Job("input_pipeline.py", ("--family", "cifar10", "--images", "2000", "--batch", "16", "--warmup", "5",
                                  "--timed", "20", "--rounds", "2")),
        Job("format_throughput.py", ("--rounds", "2")),
        Job("memory_format.py", ("--network", "resnet50", "--family", "cifar10", "--batch", "16", "--precisions",
                                 "fp32", "--warmup", "3", "--timed", "10", "--rounds", "2")),
        Job("aa_comparison.py", ("--rounds", "2")),  # .test/config-aa twice, about 3 minutes each
        Job("contention.py", ("--rounds", "3")),
    ],
    "cuda": [
        Job("framework_overhead.py", ("--device", "cuda", *_LENET, "--dataset", "mnist", "--batch", "64",
                                      "--timed", "300", "--rounds", "3")),
        Job("framework_overhead.py", ("--device", "cuda", "--network", "resnet50", "--dataset", "cifar10",
                                      "--batch", "128", "--timed", "100", "--rounds", "3")),
        Job("input_pipeline.py", ("--device", "cuda", "--family", "mnist", *_LENET, "--batch", "64",
                                  "--timed", "300", "--rounds", "3")),
        Job("input_pipeline.py", ("--device", "cuda", "--family", "cifar10", "--batch", "128", "--timed", "100",
                                  "--rounds", "3")),
        Job("format_throughput.py", ("--rounds", "2")),
        Job("memory_format.py", ("--device", "gpu1", "--network", "resnet50", "--family", "imagenet", "--batch",
                                 "64", "--precisions", "fp32,bf16", "--rounds", "2")),
        Job("aa_comparison.py", ("--rounds", "2")),
        Job("contention.py", ("--rounds", "3")),
    ],
    "smoke": [
        Job("framework_overhead.py", (*_LENET, "--dataset", "mnist", "--batch", "8", "--warmup", "1", "--timed", "2",
                                      "--rounds", "1")),
        Job("framework_overhead.py", (*_LENET, "--dataset", "mnist", "--batch", "8", "--warmup", "1", "--timed", "2",
                                      "--rounds", "1", "--interleaved")),
        Job("format_throughput.py", ("--family", "cifar10", "--family", "imagenet", "--images", "20",
                                     "--rounds", "1")),
        Job("input_pipeline.py", ("--family", "mnist", "--images", "64", "--batch", "8", "--warmup", "1",
                                  "--timed", "2", "--rounds", "1")),
        Job("memory_format.py", (*_LENET, "--family", "mnist", "--batch", "8", "--warmup", "1", "--timed", "2",
                                 "--rounds", "1", "--precisions", "fp32")),
        Job("aa_comparison.py", ("--networks", "lenet", "--tasks", "train", "--repetitions", "2", "--iterations", "4",
                                 "--rounds", "1")),
        Job("contention.py", ("--rounds", "1", "--iterations", "60")),
    ],
}
CEILING = {"cpu": ("cpu", ["fp32"]), "cuda": ("gpu", ["fp32", "tf32", "bf16"]), "smoke": ("cpu", ["fp32"])}


def ceiling_measurements(plan: str, rounds: int = 3) -> list[Measurement]:
    """The node's measured ceiling that runs' ceiling_fraction divides by (dlbench.run.matmul_peak: the best of its
    kernels and sizes), over a few rounds."""
    from ..run import matmul_peak

    processor, precisions = CEILING[plan]
    measurements = []
    for precision in precisions:
        windows, found = [], {}
        for _ in range(1 if plan == "smoke" else rounds):
            found = matmul_peak.tflops(precision, processor, sizes=(256,) if plan == "smoke" else None)
            windows.append(found["tflops"])
        measurements.append(Measurement("ceiling (dlbench.run.matmul_peak)", f"{precision} matrix-product TFLOP/s",
                                        found["framework"],
                                        f"{processor}, best: {found['kernel']} of {found['size']}, "
                                        f"{found['threads']} threads", windows))
    return measurements
