"""Our cells beside the thesis's (seed 000, Appendix A): its speed, GPU memory and GPU power for the five
frameworks on MNIST, CIFAR10 and ImageNet, on dual E5-2630 CPUs and on one and two K20m and P100 GPUs."""
from __future__ import annotations

from itertools import combinations
from pathlib import Path

import pandas as pd

from .. import files, stats
from ..config import FIGURE_4_5
from ..hardware.gpu import IDLE_SAMPLE_SECONDS
from ..metrics import METRICS
from ..registry import base_of
from ..spec import dataset_classes, gpu_count, parse_dataset_label
from . import CELL_KEYS, decimals, markdown_table, read_appendix, read_runs, verdict_columns
from . import summary as cell_summary
from .release_lines import release_lines, release_points
from .runs import release
from .thesis_definitions import chosen, decide, evidence, summary

APPENDIX_A = Path(__file__).parents[3] / "resources" / "piccione2018_appendix_a.csv"
# Our names for the thesis's
FAMILIES = {"MNIST": "mnist", "CIFAR10": "cifar10", "ImageNet": "imagenet"}
NETWORKS = {"LeNet": "lenet", "AlexNet": "alexnet", "ResNet50": "resnet50", "GoogLeNet": "googlenet", "VGG16": "vgg16"}
FRAMEWORKS = {"Caffe": "caffe", "TensorFlow": "tensorflow", "PyTorch": "pytorch", "MXNet": "mxnet", "CNTK": "cntk"}
# Our devices and the thesis's hardware columns they are set beside; a GPU device of a hardware target that
# names its thesis GPU (config hardware[].thesis) is set beside that GPU's column alone
HARDWARE = {"cpu": ("cpu_e5-2630_12or20cores",), "gpu1": ("1x_p100", "1x_k20m"), "gpu2": ("2x_p100", "2x_k20m")}
HARDWARE_WORDS = {"cpu_e5-2630_12or20cores": "2x Xeon E5-2630 (12 cores, ImageNet 20)",
                  "1x_p100": "1x Tesla P100", "1x_k20m": "1x Tesla K20m",
                  "2x_p100": "2x Tesla P100", "2x_k20m": "2x Tesla K20m"}


def like() -> dict[str, str]:
    """Our metrics measured as the thesis measured its (metrics.Metric.thesis), each to the thesis's: its memory
    and power are whole-run means of nvidia-smi's readings, set beside ours of the same definition (never beside
    our peaks or timed-window means), and of the two GPUs' reading, summed or one card's, the one its appendix
    supports (:mod:`.thesis_definitions`)."""
    decided = chosen(APPENDIX_A)
    return {metric: definition.thesis for metric, definition in METRICS.items()
            if definition.thesis and definition.over_gpus == decided.get(definition.thesis, "sum")}


def setup_difference_rows() -> tuple[tuple[str, str, str], ...]:
    """What still differs from the thesis's setup in every cell, and why, each under a key: thesis.md ends with it,
    docs/studies.md's table of what differs from each study has it (tests/unit/tables/test_thesis.py keeps the two the
    same; config/thesis.yaml's comment names the keys)."""
    ours = ", ".join(f"`{metric}`" for metric, theirs in like().items() if theirs != "train_speed")
    return (
        ("networks",
         ("one network description built by every framework, not each framework's official model: GoogLeNet with "
          "batch norm and without its auxiliary heads, AlexNet without LRN and without its two groups"),
         ("the same math in every cell (parameter counts checked equal); the official models differed from "
          "framework to framework")),
        ("versions",
         ("today's framework versions (their environments' pins, `envs/*.requirements.txt`: Caffe 1.0 built from "
          "source, TensorFlow 2.21, PyTorch 2.13, MXNet 1.9.1, CNTK 2.7), not its Figure 4.3's (Caffe 1.0, TF 1.9, "
          "PyTorch 0.4.0, MXNet 1.2.0, CNTK 2.5.1: "
          "Anaconda's builds with CUDA 9, NCCL 2.1 and cuDNN 7.1.1); `releases: [current, thesis]` runs the thesis's "
          "too where a backend speaks its API (CNTK 2.5.1, MXNet 1.2.0, TensorFlow 1.9.0's graphs and sessions, "
          "PyTorch 1.0.0; TF 1.9's profile from its RunMetadata trace as seed 004's, MXNet 1.2's from its profiler's "
          "trace as today's; MXNet 1.2's LSTM is unavailable, its Gluon LSTM cannot be hybridised), each in cells of "
          "its own"),
         ("PyTorch 0.4 is not on PyPI: its thesis release is 1.0.0, the oldest there (no profile: 1.0's profiler "
          "ties no backward op to its layer); Caffe is 1.0 in both; each record names its versions and CUDA build")),
        ("Caffe without cuDNN", "Caffe's GPU convolutions are its own kernels (im2col and cuBLAS), not cuDNN's",
         "BVLC Caffe 1.0's cuDNN layers call functions cuDNN 8 removed, and cuDNN 7 has no build for today's CUDA"),
        ("K20m and P100",
         ("of today's builds only CNTK's (CUDA 10) has code for the K20m (sm_35); PyTorch's CUDA 12.6 build, "
          "TensorFlow's, MXNet's and JAX's have it for the P100 (sm_60), Caffe's CUDA 13 build for neither: the "
          "thesis's GPU columns cannot all be filled on its own GPUs"),
         "CUDA 12 dropped Kepler; a run on a GPU its build has no code for is recorded unavailable, saying so"),
        ("memory and power",
         (f"its memory and power ({ours}) are NVML's readings at `sample_hz` (a CPU run's idle GPUs at 1 Hz) "
          "averaged over the whole run, not `nvidia-smi`'s at 1 Hz; of two GPUs' readings, the definition Appendix "
          "A's numbers support (`thesis.md` says which and why; the other is in the appendix); `thesis.md` sets only "
          "these beside the thesis's, not our peaks and timed-window means"),
         "the same definition from the same device counters; every sample is kept beside the record"),
        ("warm-up", "the iterations are Figure 4.5's, all timed after a warm-up (`warmup_added`)",
         "the thesis timed them all and says nothing of a warm-up"),
        ("TensorFlow's memory", "TensorFlow's GPU memory grows as the model needs (`set_memory_growth`)",
         "TF 1.9's allocator took most of the card by default, which measures the allocator, not the model"),
        ("machines",
         ("our CPUs and GPUs (each cell names its machine), not its CentOS 7.3 nodes' Xeon E5-2620 (12 cores) and "
          "E5-2630 (20) and Tesla K20m or P100 GPUs"),
         "a `hardware` target's `thesis:` names the GPU column its runs stand beside"),
    )


# A framework's releases stand apart (registry.Framework.release): each set beside the thesis's, never ranked together
KEYS = ["metric", "dataset", "network", "framework", "release", "hardware", "device", "machine", "thesis_hardware"]
COLUMNS = [*KEYS, "unit", "ours", "ours_mean", "n", "ours_centre", "ours_spread", "ours_log", "thesis", "ratio",
           "ratio_low", "ratio_high", "ratio_text", "verdict", "apples_to_oranges"]
RANK_COLUMNS = [*(key for key in KEYS if key != "framework"), "frameworks", "spearman", "same_order", "swapped",
                "not_resolved"]


def reference(path: Path = APPENDIX_A) -> pd.DataFrame:
    """Appendix A in our names; its 0s (not available, or not measured on CPUs) as missing."""
    table = pd.read_csv(path)
    table = table.assign(family=table["dataset"].map(FAMILIES), network=table["network"].map(NETWORKS),
                         framework=table["framework"].map(FRAMEWORKS)).rename(columns={"hardware": "thesis_hardware"})
    return table.assign(value=table["value"].where(table["value"] > 0)).drop(columns="dataset")


def comparable(appendix: pd.DataFrame) -> pd.DataFrame:
    """The appendix cells the thesis measured too: training at the thesis's precision, one device or two
    GPUs, on its datasets (all their classes) and networks, in its frameworks."""
    base = appendix["framework"].map(base_of)
    cells = appendix[(appendix["task"] == "train") & (appendix["variant"] == "fp32")
                     & appendix["device"].isin(list(HARDWARE)) & base.isin(FRAMEWORKS.values())
                     & appendix["network"].isin(NETWORKS.values())
                     & appendix["dataset"].map(lambda label: dataset_classes(label) is None)]
    return cells.assign(family=cells["dataset"].map(lambda label: parse_dataset_label(label)[0]),
                        base=base[cells.index], release=cells["framework"].map(release))


def thesis_columns(device: str, thesis_gpu: str | None) -> tuple[str, ...]:
    """The thesis's hardware columns a cell on ``device`` is set beside: its target's thesis GPU's where it names
    one (``k20m``, ``p100``), else both GPUs'."""
    if thesis_gpu and gpu_count(device):
        return (f"{gpu_count(device)}x_{thesis_gpu}",)
    return HARDWARE[device]


def comparison(appendix: pd.DataFrame, runs: pd.DataFrame, thesis: pd.DataFrame | None = None,
               thesis_gpus: dict[str, str] | None = None, threshold: float = stats.THRESHOLD) -> pd.DataFrame:
    """One row per (our cell, thesis hardware it is set beside) for the thesis's metrics: our cell as the
    appendix writes it, its mean, the thesis's value, ours ÷ theirs with our cell's 95 % interval over their one
    published value and its verdict at ``threshold`` (dlbench.stats.over_published), and what makes the two differ.
    ``thesis_gpus``: the thesis GPU each of the config's hardware targets names (config hardware[].thesis)."""
    thesis = reference() if thesis is None else thesis
    thesis_gpus = thesis_gpus or {}
    theirs_of = like()
    cells = comparable(appendix[appendix["metric"].isin(theirs_of)])
    rows = []
    for cell in cells.itertuples():
        needs = METRICS[cell.metric].needs
        if (needs == "gpu" and not gpu_count(cell.device)) or (needs == "idle_gpu" and gpu_count(cell.device)):
            continue  # the thesis's "GPU power" of a CPU run is its idle cards' draw: idle_gpu_power(_per_gpu)
        if needs == "idle_gpu" and pd.isna(cell.mean):
            continue  # a node without GPUs (or whose GPUs were busy) has no idle draw to set beside the thesis's
        thesis_gpu = thesis_gpus.get(cell.hardware)
        for column in thesis_columns(cell.device, thesis_gpu):
            match = thesis[(thesis["metric"] == theirs_of[cell.metric]) & (thesis["family"] == cell.family)
                           & (thesis["network"] == cell.network) & (thesis["framework"] == cell.base)
                           & (thesis["thesis_hardware"] == column)]
            theirs = match["value"].iloc[0] if len(match) else float("nan")
            words = differences(cell, column, runs, theirs, theirs_of[cell.metric])
            if gpu_count(cell.device) and not thesis_gpu:
                both = " and ".join(HARDWARE_WORDS[c] for c in HARDWARE[cell.device])
                words.append(f"set beside the thesis's {both}: " + (
                    f"target {cell.hardware} names no thesis GPU (hardware[].thesis)" if cell.hardware
                    else "the config names no hardware target whose thesis GPU this is"))
            rows.append({"metric": cell.metric, "dataset": cell.dataset, "network": cell.network,
                         "framework": cell.framework, "release": cell.release, "hardware": cell.hardware,
                         "device": cell.device,
                         "machine": cell.machine, "thesis_hardware": column,
                         "unit": cell.unit, "ours": cell.cell, "ours_mean": cell.mean, "n": cell.n,
                         "ours_centre": cell.centre, "ours_spread": cell.spread, "ours_log": cell.log, "thesis": theirs,
                         **{column: values[0] for column, values in verdict_columns(
                             [stats.over_published(cell_summary(cell._asdict()), theirs, threshold)],
                             METRICS[cell.metric].comparative).items()},
                         "apples_to_oranges": "; ".join(words)})
    return pd.DataFrame(rows, columns=COLUMNS)


def differences(cell, column: str, runs: pd.DataFrame, theirs: float, metric: str) -> list[str]:
    """What makes our cell and the thesis's (of its ``metric``) a different measurement, in a reader's words."""
    words = []
    if pd.isna(theirs):
        words.append("the thesis has no value here (not available, or not measured on CPUs)")
    ours = runs[(runs[CELL_KEYS] == [getattr(cell, key) for key in CELL_KEYS]).all(axis=1)]  # its runs
    if len(ours):
        first = ours.iloc[0]
        words.append(f"our {cell.machine} vs {HARDWARE_WORDS[column]}")
        batch = FIGURE_4_5.get((cell.family, cell.network), (None,))[0]
        if batch and first["batch_size_global"] != batch:
            words.append(f"batch {first['batch_size_global']} (thesis {batch})")
        if first["data_mode"] != "real":
            words.append({"generated": "generated stand-in files vs the real dataset",
                          "synthetic": "synthetic in-memory batches (no input pipeline) vs the real dataset"}
                         [first["data_mode"]])
    if metric == "gpu_memory" and cell.framework == "tensorflow":
        words.append("the thesis's TensorFlow figure is its allocator taking most of the card (TF 1.9's default); "
                     "ours grows as the model needs (set_memory_growth)")
    if metric != "train_speed":
        idle = METRICS[cell.metric].needs == "idle_gpu"  # a CPU run's idle GPUs, sampled at their own rate
        rate = f"{1 / IDLE_SAMPLE_SECONDS:g} Hz" if idle else "measurement.sample_hz"
        words.append(f"NVML read at {rate} vs nvidia-smi at 1 Hz, both averaged over the whole run")
    return words


def rank_agreement(compared: pd.DataFrame, threshold: float = stats.THRESHOLD) -> pd.DataFrame:
    """Per case, placement, our machine and thesis hardware: do the frameworks come out in the same order? Our
    order counts only where our repetitions resolve it (dlbench.stats.ratio at ``threshold``): frameworks they
    cannot order share a rank (Spearman's rank correlation is of those shared ranks and the thesis's), only a
    resolved pair can have swapped (``a < b``: a resolved below b here, above it in the thesis), and the pairs our
    runs leave unresolved are listed (``a ~ b``). The releases between the thesis's and today's are not ranked: two
    of one framework would stand in one group as if two frameworks."""
    both = compared[compared["release"] != "between"].dropna(subset=["ours_mean", "thesis"])
    rows = []
    for key, group in both.groupby(RANK_COLUMNS[:RANK_COLUMNS.index("thesis_hardware") + 1], sort=True):
        if len(group) < 2:
            continue
        group = group.set_index("framework")
        ours = {framework: stats.Summary(int(cell["n"]), cell["ours_centre"], cell["ours_spread"],
                                         bool(cell["ours_log"])) for framework, cell in group.iterrows()}
        shared = pd.Series(stats.ranks(ours, higher_first=False, threshold=threshold))  # 1: the lowest, ascending
        theirs = group["thesis"].rank()
        ordered = shared.nunique() > 1 and theirs.nunique() > 1  # else no correlation is defined
        rho = shared.corr(theirs, method="spearman") if ordered else float("nan")
        swapped, unresolved = [], []
        for a, b in combinations(sorted(group.index), 2):
            verdict = stats.ratio(ours[a], ours[b], threshold).verdict  # b over a
            if verdict not in (stats.HIGHER, stats.LOWER):
                unresolved.append(f"{a} ~ {b}")
            elif (verdict == stats.HIGHER) == (group.at[b, "thesis"] < group.at[a, "thesis"]):
                swapped.append(f"{a} {'<' if verdict == stats.HIGHER else '>'} {b}")
        rows.append(dict(zip(RANK_COLUMNS, key), frameworks=len(group), spearman=rho, same_order=not swapped,
                         swapped=", ".join(swapped), not_resolved=", ".join(unresolved)))
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


ORDER_COLUMNS = ["metric", "dataset", "network", "hardware", "device", "machine", "thesis_hardware", "order",
                 "changed"]


def order_changes(ranks: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """For each pair of today's frameworks in the reverse of the thesis's order (:func:`rank_agreement`'s swapped: our
    runs resolve it), the steps along either's release line in that cell (:func:`release_lines`) that moved it the
    way it went (``a < b``: a step down of a, or up of b): the releases between which the order changed, where the
    lines resolve it; else that they do not."""
    rows = []
    for rank in ranks[(ranks["release"] == "current") & ranks["swapped"].fillna("").astype(bool)].itertuples():
        cell = pairs[(pairs["metric"] == rank.metric) & (pairs["task"] == "train") & (pairs["variant"] == "fp32")]
        for key in ("dataset", "network", "hardware", "device", "machine"):
            cell = cell[cell[key].fillna("").astype(str) == ("" if pd.isna(getattr(rank, key)) else
                                                                str(getattr(rank, key)))]
        for order in rank.swapped.split(", "):
            first, sign, second = order.split(" ")
            lower, higher = (first, second) if sign == "<" else (second, first)
            moved = cell[cell["step"].astype(bool) & (((cell["framework"] == lower) & (cell["ratio"] < 1))
                                                      | ((cell["framework"] == higher) & (cell["ratio"] > 1)))]
            steps = [f"{row.framework} between {row.before} and {row.after}: {row.ratio_text}"
                     + (f" (also changed: {row.also_changed})" if row.also_changed else "")
                     for row in moved.itertuples()]
            lined = not cell[cell["framework"].isin([lower, higher])].empty
            rows.append({**{key: getattr(rank, key) for key in ORDER_COLUMNS[:7]}, "order": order, "changed": (
                "; ".join(steps) if steps else "not resolved along the releases measured" if lined
                else "no release line of either measured in this cell")})
    return pd.DataFrame(rows, columns=ORDER_COLUMNS)


def order_section(changes: pd.DataFrame, lines_measured: bool) -> str:
    """thesis.md's account of where the thesis's order changed, where the config measures release lines."""
    if not lines_measured:
        return ""
    return ("\n\n## Where the thesis's order changed, along the release lines\n\n"
            + ("Each pair of today's frameworks in the reverse of the thesis's order, and the steps along their "
               "release lines (results/tables/regressions.md) that moved it so.\n\n"
               + markdown_table(changes.assign(thesis_hardware=changes["thesis_hardware"].map(HARDWARE_WORDS)))
               if len(changes) else "No pair of today's frameworks stands in the reverse of the thesis's order in "
                                    "a cell our runs resolve."))


def setup_differences() -> str:
    """:func:`setup_difference_rows` as rows of docs/studies.md's table of what differs from each study."""
    return "\n".join(f"| thesis | **{key}**: {difference} | {why} |"
                     for key, difference, why in setup_difference_rows())


def definitions_section() -> str:
    """Which of two GPUs' readings, summed or one card's, stands beside the thesis's memory and power, with
    Appendix A's evidence (:mod:`.thesis_definitions`)."""
    found = evidence(pd.read_csv(APPENDIX_A))
    decided = decide(found)
    ours = {theirs: metric for metric, theirs in like().items() if METRICS[metric].needs == "gpu"}
    idle = next(metric for metric, theirs in like().items() if METRICS[metric].needs == "idle_gpu")
    return ("\n\n## Our memory and power: which definition of two GPUs' readings\n\n"
            "The thesis does not say whether a two-GPU run's memory and power are summed over its cards or one "
            "card's. Its Appendix A decides, by the pairs of one-GPU and two-GPU values each definition cannot give:"
            "\n\n" + summary(found, decided) + "\n\n"
            f"Set beside the thesis's here: {', '.join(f'`{ours[m]}` ({m})' for m in sorted(ours))}; a CPU run's "
            f"idle GPUs as its GPU power: `{idle}`, as the loaded cards. The other definition is in the appendix "
            "and the records (each GPU's value).\n\n" + markdown_table(found))


def markdown(compared: pd.DataFrame, ranks: pd.DataFrame, order: str = "") -> str:
    setup = order + (definitions_section() + "\n\n## What still differs from the thesis's setup, in every cell\n\n"
             + markdown_table(pd.DataFrame(setup_difference_rows(), columns=["what", "difference", "why"])) + "\n")
    if not len(compared):
        return ("# Our cells beside the thesis's\n\nNo cell of this config is one the thesis measured (training "
                "in fp32 on cpu, gpu1 or gpu2; LeNet on MNIST, AlexNet, ResNet50, GoogLeNet or VGG16 on CIFAR10 "
                "or ImageNet; Caffe, TensorFlow, PyTorch, MXNet or CNTK)." + setup)
    shown = compared.assign(
        thesis_hardware=compared["thesis_hardware"].map(HARDWARE_WORDS),
        thesis=[("—" if pd.isna(value) else f"{value:,.0f}") for value in compared["thesis"]],
        ratio=compared["ratio_text"])
    ranked = ranks.assign(thesis_hardware=ranks["thesis_hardware"].map(HARDWARE_WORDS),
                          spearman=ranks["spearman"].round(2))
    if (compared["release"] == "current").all():  # today's releases alone: no column to tell them apart
        shown, ranked = shown.drop(columns="release"), ranked.drop(columns="release")
    return ("# Our cells beside the thesis's (Appendix A)\n\n"
            + markdown_table(shown.drop(columns=["ours_mean", "ours_centre", "ours_spread", "ours_log", "ratio_low",
                                                "ratio_high", "ratio_text"]))
            + "\n\n## Do the frameworks come out in the same order?\n\n"
            + (markdown_table(ranked) if len(ranked) else "No case has two frameworks measured in both.")
            + setup)


# Appendix A's own words: its metrics with their units, and its hardware columns in its order
APPENDIX_A_METRICS = {"train_speed": "Average Training Speed (images per second)",
                      "gpu_memory": "Average GPU Memory Usage (MiB)", "gpu_power": "Average GPU Power Usage (W)"}
APPENDIX_A_COLUMNS = {"cpu_e5-2630_12or20cores": "E5-2630 (12/20 cores)", "1x_k20m": "1 GPU K20m",
                      "1x_p100": "1 GPU P100", "2x_k20m": "2 GPU K20m", "2x_p100": "2 GPU P100"}


def appendix_a(compared: pd.DataFrame, path: Path = APPENDIX_A) -> pd.DataFrame:
    """Appendix A as the thesis laid it out (a row per metric, dataset, network and framework in its order, its
    five hardware columns), each column's value beside ours: the mean of our cell set beside it (:func:`comparison`;
    several, each after its target or machine, where several are), a dash where one side has none."""
    published = pd.read_csv(path)
    ours = compared.dropna(subset=["ours_mean"])
    ours = ours.assign(theirs=ours["metric"].map(like()),
                       family=ours["dataset"].map(lambda label: parse_dataset_label(label)[0]),
                       base=ours["framework"].map(base_of))
    cell = ["theirs", "family", "network", "base", "thesis_hardware"]
    several = ours.groupby(cell)["ours_mean"].transform("size") > 1
    ours = ours.assign(value=[f"{mean:,.{decimals(mean)}f}" for mean in ours["ours_mean"]])
    where = ours["hardware"].where(ours["hardware"] != "", ours["machine"])  # a release, else a target or machine
    where = ours["framework"].where(ours["release"] != "current", where)
    ours["value"] = ours["value"].where(~several, ours["value"] + " (" + where + ")")
    ours = ours.groupby(cell)["value"].agg("; ".join)
    rows = []
    for key, cell in published.groupby(["metric", "dataset", "network", "framework"], sort=False):
        metric, dataset, network, framework = key
        row = {"Metric": APPENDIX_A_METRICS[metric], "Dataset": dataset, "Network": network, "Framework": framework}
        values = cell.set_index("hardware")["value"]
        for column, words in APPENDIX_A_COLUMNS.items():
            theirs = values.get(column, 0)
            row[f"{words}: thesis"] = f"{theirs:,.0f}" if theirs > 0 else "—"
            row[f"{words}: ours"] = ours.get((metric, FAMILIES[dataset], NETWORKS[network], FRAMEWORKS[framework],
                                              column), "—")
        rows.append(row)
    return pd.DataFrame(rows)


def write(appendix_csv: Path, runs_csv: Path, csv_out: Path, ranks_out: Path, md_out: Path, appendix_a_out: Path,
          thesis_gpus: dict[str, str] | None = None, threshold: float = stats.THRESHOLD) -> None:
    appendix, runs = read_appendix(appendix_csv), read_runs(runs_csv)
    compared = comparison(appendix, runs, thesis_gpus=thesis_gpus, threshold=threshold)
    ranks = rank_agreement(compared, threshold)
    pairs = release_lines(release_points(appendix, runs), threshold)
    files.write_text(csv_out, compared.to_csv(index=False))
    files.write_text(ranks_out, ranks.to_csv(index=False))
    files.write_text(md_out, markdown(compared, ranks, order_section(order_changes(ranks, pairs), len(pairs) > 0)))
    files.write_text(
        appendix_a_out,
        "# Appendix A in its own layout, ours beside the thesis's\n\nThe thesis's rows and columns (CPU, one and two "
        "K20m and P100), each column the thesis's value and ours set beside it as in `thesis.md` (its definitions of "
        "memory and power; a GPU cell of a target that names no thesis GPU stands in both GPU models' columns). "
        "A dash: not measured, or not available in the thesis (its 0s).\n\n"
        + markdown_table(appendix_a(compared)) + "\n")
