"""The metrics the tables and figures report (each a field of the run record, its unit and meaning, the
runs that measure it) and the flags that mark runs whose numbers say more about the machine than about the
framework, with their thresholds: the one place a metric or a threshold is set."""
from __future__ import annotations

from dataclasses import dataclass

from .record.compute import BEATS_CEILING
from .spec import gpu_count
from .stats import CONFIDENCE
from .tasks import TASKS


@dataclass(frozen=True)
class Metric:
    section: str  # of the run record
    field: str
    unit: str
    meaning: str  # for figure captions: what the number is and where it comes from
    tasks: tuple[str, ...] = tuple(TASKS)  # the runs that measure it
    # Whether repetitions should agree to a few percent, so that a larger coefficient of variation says the
    # runs were unsteady (not so for shares near zero, such as a synthetic run's input wait)
    steady: bool = True
    # "gpu": only runs on GPUs measure it; "rapl": only on nodes with RAPL counters; "peak": only where dlbench
    # knows the hardware's peak (GPUs, CPUs of dlbench.hardware.peaks); "idle_gpu": only CPU runs on nodes with GPUs
    needs: str = ""
    beside: str = ""  # a metric whose bars its figure draws beside its own (and that gets no figure of its own)
    # "max" or "min": the better end, for a heatmap per dataset of each framework against the best one per network
    # (of the training metrics) and for one hardware target over another (tables.targets)
    best: str = ""
    flagged: bool = True  # whether the runs' flags (input-bound, contended) bear on it: not on a peak or an accuracy
    signed: bool = False  # whether a value below 0 can be true (a runs.csv from elsewhere is checked: read_runs)
    thesis: str = ""  # the thesis's metric (Appendix A) measured the same way, which tables.thesis sets it beside
    # A record field with one value per GPU beside it (``<field>_per_gpu``): "sum" reads the field, the sum over the
    # run's GPUs; "mean" averages the per-GPU values, the reading of one card (the thesis's definition, maybe)
    over_gpus: str = "sum"
    # Whether its cells' intervals and ratios are on the log scale (dlbench.stats): a speed's, a time's, a size's
    # are; a share, an accuracy, a value that can be 0 or below are compared by their difference
    log: bool = True

    @property
    def comparative(self) -> tuple[str, str]:
        """The words for a cell above and below another: faster and slower for a speed, slower and faster for a
        time, else higher and lower."""
        if self.unit == "images/s":
            return "faster", "slower"
        if self.unit in ("s", "ms"):
            return "slower", "faster"
        return "higher", "lower"


@dataclass(frozen=True)
class Flag:
    words: str  # in the appendix's cells and on the figures' bars
    column: str  # of runs.csv
    above: float  # the share above which a run carries the flag
    metrics: tuple[str, ...] = ()  # the metrics it bears on; none: every flagged one


# The metrics measured over a run's timed window of steps
WINDOW_METRICS = ("train_speed", "train_speed_median", "inference_speed", "cpu_per_wall", "achieved_tflops", "mfu",
                  "ceiling_fraction", "gpu_power", "gpu_energy_per_image", "cpu_energy_per_image")

# The marks of runs whose speed says less about the framework than about its surroundings: they waited
# for their input, or other work shared their cores (dlbench.hardware.host), or their "nodes" were one machine.
FLAGS = {"input_bound": Flag("input-bound", "input_wait", 0.05),
         "contended": Flag("contended", "contention_share", 0.10),
         "one_machine": Flag("nodes on one machine", "nodes_share_machine", 0.5),
         "beats_ceiling": Flag("beats the ceiling", "ceiling_fraction", BEATS_CEILING, ("ceiling_fraction",)),
         # Its timed steps had not settled: a trend or a change point between their halves (dlbench.stats); it bears
         # on what the timed window measures, not on the set-up before it or the latency calls after it
         "not_steady": Flag("steps not steady", "unsteady_steps", 0.5, WINDOW_METRICS)}


# A cell whose repetitions vary more than this (sd over mean) is marked: its mean is a rough one.
UNSTEADY = 0.05


def percent(share: float) -> str:
    return f"{share:.0%}".replace("%", " %")


def caption_thresholds() -> dict[str, str]:
    """The flags' and the unsteady mark's thresholds as the report's captions and docs/measurement.md write them
    (``5 %``): the rules pass them to the captions as params."""
    return {"input_bound": percent(FLAGS["input_bound"].above), "contended": percent(FLAGS["contended"].above),
            "beats_ceiling": percent(FLAGS["beats_ceiling"].above - 1), "unsteady": percent(UNSTEADY)}

def caption_statistics(statistics: dict) -> dict:
    """The config's ``statistics`` (threshold, contended) and the words the captions print for them and for the
    intervals' confidence (``95 %``, ``5 %``): the rules pass them to the captions and scripts as params."""
    threshold = f"{statistics['threshold'] * 100:.3g} %"
    return {**statistics, "confidence": percent(CONFIDENCE), "threshold_words": threshold}


# The one place a metric is added. The thesis's three (speed, GPU memory, GPU power) first, ours then theirs: our
# memory and power as peaks and over the timed window, theirs (seed 000's definitions) from the same samples.
METRICS = {
    "train_speed": Metric("timing", "images_per_second_mean", "images/s",
                          "images per second over the timed iterations (warm-up excluded), with the global batch, "
                          "from the training loop's own clock: each interval runs from one step's completion to "
                          "the next (accuracy runs: over all their epochs, the first steps included; profile runs: "
                          "their steps without the profiler; hatched beside it: the speed of the median step)",
                          tasks=("train", "accuracy", "profile"), best="max", thesis="train_speed",
                          beside="train_speed_median"),
    "train_speed_median": Metric("timing", "images_per_second_median", "images/s",
                                 "images per second of the median timed step (the batch over the median step time, "
                                 "warm-up excluded): beside the window's speed, which a few slow steps pull down "
                                 "and the median does not", tasks=("train",)),
    "inference_speed": Metric("timing", "images_per_second_mean", "images/s",
                              "images per second of forward passes without gradients at the case's batch size, "
                              "timed as training steps are (one batch in flight, warm-up excluded)",
                              tasks=("inference",), best="max"),
    **{f"latency_{percentile}": Metric(
        "latency", f"{percentile}_ms", "ms",
        f"{words} latency of a single image's forward pass over the timed calls (warm-up excluded), each call "
        "waited for until its result was there (a device event or a read-back)", tasks=("inference",))
       for percentile, words in (("p50", "median"), ("p90", "90th-percentile"), ("p99", "99th-percentile"))},
    "gpu_memory": Metric("memory", "gpu_process_peak_mib", "MiB",
                         "peak GPU memory of the run's processes, as NVML reports it, sampled through the run "
                         "(hatched beside it: the framework allocator's own peak, what its tensors took)",
                         needs="gpu", beside="allocator_memory", flagged=False),
    "allocator_memory": Metric("memory", "framework_allocator_peak_mib", "MiB",
                               "peak memory the framework's allocator held for tensors on the GPU, by the "
                               "framework's own count (torch.cuda.max_memory_allocated, TensorFlow's and JAX's "
                               "memory stats); the process peak adds the CUDA context, workspaces and caches",
                               needs="gpu", flagged=False),
    "gpu_memory_mean": Metric("memory", "gpu_device_mean_mib", "MiB",
                              "GPU memory as the thesis read it: each GPU's used memory (all its processes', as "
                              "nvidia-smi shows it) averaged over every sample of the whole run, start-up included, "
                              "summed over the run's GPUs (hatched beside it: the mean over them, one card's)",
                              needs="gpu", flagged=False, thesis="gpu_memory", beside="gpu_memory_mean_per_gpu"),
    "gpu_memory_mean_per_gpu": Metric("memory", "gpu_device_mean_mib", "MiB",
                                      "gpu_memory_mean averaged over the run's GPUs instead of summed: one card's "
                                      "used memory over the whole run", needs="gpu", flagged=False,
                                      thesis="gpu_memory", over_gpus="mean"),
    "gpu_power": Metric("power", "gpu_mean_w", "W",
                        "mean power of the run's GPUs over the timed iterations, from NVML (its energy counter "
                        "where the GPU has one, else integrated power samples)", needs="gpu"),
    "gpu_power_run_mean": Metric("power", "gpu_run_mean_w", "W",
                                 "GPU power as the thesis read it: each GPU's power readings averaged over every "
                                 "sample of the whole run, start-up included, summed over the run's GPUs (hatched "
                                 "beside it: the mean over them, one card's)", needs="gpu", thesis="gpu_power",
                                 beside="gpu_power_run_mean_per_gpu"),
    "gpu_power_run_mean_per_gpu": Metric("power", "gpu_run_mean_w", "W",
                                         "gpu_power_run_mean averaged over the run's GPUs instead of summed: one "
                                         "card's draw over the whole run", needs="gpu", thesis="gpu_power",
                                         over_gpus="mean"),
    "idle_gpu_power": Metric("power", "idle_gpu_mean_w", "W",
                             "the GPU power of a CPU run as the thesis read it: the node's GPUs' draw while the run "
                             "left them idle (read once a second; none where any process ran on them), summed over "
                             "the GPUs (hatched beside it: the mean over them, one card's)", tasks=("train",),
                             needs="idle_gpu", thesis="gpu_power", beside="idle_gpu_power_per_gpu"),
    "idle_gpu_power_per_gpu": Metric("power", "idle_gpu_mean_w", "W",
                                     "idle_gpu_power averaged over the node's GPUs instead of summed: one idle "
                                     "card's draw", tasks=("train",), needs="idle_gpu", thesis="gpu_power",
                                     over_gpus="mean"),
    "gpu_energy_per_image": Metric("power", "energy_per_image_j", "J/image",
                                   "GPU energy over the timed iterations divided by the images trained in them",
                                   needs="gpu", best="min"),
    "host_memory": Metric("memory", "host_peak_rss_mib", "MiB",
                          "peak resident memory of the run's process tree (the runner, its input-pipeline workers), "
                          "sampled through the run", flagged=False),
    "cpu_per_wall": Metric("timing", "cpu_per_wall", "CPU s / wall s",
                           "CPU time of the training process over the timed iterations divided by their wall time: "
                           "how many cores it kept busy"),
    "setup_time": Metric("timing", "setup_seconds", "s",
                         "seconds from the runner's launch to its first step: the interpreter's start, the "
                         "framework's import, the model and input pipeline built (each in the record)"),
    "first_step_time": Metric("timing", "first_step_seconds", "s",
                              "seconds of the first step (training step or forward pass), where compilers compile "
                              "(torch.compile, XLA) and cuDNN autotunes; the timed iterations exclude it"),
    "achieved_tflops": Metric("compute", "achieved_tflops", "TFLOP/s",
                              "FLOPs per image (a training step's forward and backward, an inference run's forward, "
                              "counted from the network's description as torch.utils.flop_counter counts them) "
                              "times images per second"),
    "input_wait": Metric("timing", "input_wait_share", "share of timed time",
                         "the share of the timed iterations' time the training loop waited for its next batch "
                         f"(runs above {FLAGS['input_bound'].above:.0%} are marked input-bound)",
                         tasks=("train", "accuracy"), steady=False, log=False),
    "cpu_energy_per_image": Metric("power", "cpu_energy_per_image_j", "J/image",
                                   "CPU package and DRAM energy (RAPL) over the timed iterations divided by the "
                                   "images trained in them; the whole package's, other processes' work included",
                                   needs="rapl", best="min"),
    "test_accuracy": Metric("quality", "accuracy", "top-1",
                            "top-1 accuracy on the test split after the last epoch, scored from the framework's "
                            "logits the same way in every framework", tasks=("accuracy",), flagged=False, log=False),
    "time_to_accuracy": Metric("quality", "time_to_accuracy_seconds", "s",
                               "seconds from the first training step to the end of the evaluation of the first epoch "
                               "whose test accuracy reached the case's target (training and evaluations)",
                               tasks=("accuracy",), best="min"),
    "total_time": Metric("quality", "total_seconds", "s",
                         "seconds from the first training step to the end of the last epoch's evaluation: all the "
                         "run's epochs, training and evaluations (seed 003's Time column)", tasks=("accuracy",),
                         best="min"),
    "profiling_overhead": Metric("profile", "overhead", "× unprofiled step",
                                 "a step's mean wall time under the framework's profiler over a step's without it "
                                 "(seed 004 reports +235 to +245 %: 3.35-3.45x read literally)", tasks=("profile",)),
    "profiling_whole_overhead": Metric("profile", "whole_overhead", "× unprofiled training",
                                       "seed 004's profiling overhead: the whole profiled training's wall time (the "
                                       "profiler's start, every profiled step, its trace read back) over as many "
                                       "unprofiled steps' (+235 to +245 % in the seed)", tasks=("profile",)),
    "profiling_whole_overhead_seconds": Metric("profile", "whole_overhead_seconds", "s",
                                               "seed 004's profiling overhead in seconds (its Figures 4-1 and 4-2): "
                                               "the whole profiled training's wall time less as many unprofiled "
                                               "steps' (below 0 where the profiler's cost is within the run's noise)",
                                               tasks=("profile",), signed=True, log=False),
    "unaccounted_share": Metric("profile", "unaccounted_share", "share of a profiled step",
                                "the share of a profiled step's wall time that neither the layers' forward and "
                                "backward times nor the optimizer's update account for (seed 004 found 38-54 %; "
                                "below 0 where the framework's ops overlap)",
                                tasks=("profile",), steady=False, signed=True, log=False),
    "mfu": Metric("compute", "mfu", "fraction of peak",
                  "model FLOPs utilisation: achieved TFLOP/s over the peak of the run's devices from the hardware's "
                  "own numbers (GPU datasheets' dense rates; CPU cores × highest clock × FLOP per cycle), where "
                  "dlbench knows them", needs="peak"),
    "ceiling_fraction": Metric("compute", "ceiling_fraction", "fraction of measured ceiling",
                               "achieved TFLOP/s over the ceiling of the run's devices, the best rate of dense "
                               "products through the BLAS and the convolution library over a sweep of sizes, "
                               "measured once per node in the run's precision (runs above "
                               f"{BEATS_CEILING:.2f} are marked: the ceiling's kernels were not the fastest)"),
}


def drawn(metric: str, tasks, devices, rapl: bool, cpu_peak: bool = False, idle_gpus: bool = False) -> bool:
    """Whether a cell whose runs have these tasks and devices gets ``metric``'s figure: whether any of them
    can measure it (``rapl``: whether the node has RAPL counters; ``cpu_peak``: whether dlbench knows its CPU's
    peak, dlbench.hardware.peaks; ``idle_gpus``: whether its CPU runs have GPUs beside them). A figure of nothing but
    "unavailable" notes tells a reader nothing."""
    definition = METRICS[metric]
    if any(other.beside == metric for other in METRICS.values()):
        return False  # drawn in the other's figure
    on_gpus = any(gpu_count(device) for device in devices)
    on_cpus = not all(gpu_count(device) for device in devices)
    return bool(set(tasks) & set(definition.tasks)) and {"gpu": on_gpus, "rapl": rapl, "peak": on_gpus or cpu_peak,
                                                   "idle_gpu": on_cpus and idle_gpus}.get(definition.needs, True)
