"""One hardware target against another (config ``compare_targets``): for every cell both ran on the same device
(the same dataset, network, framework, variant and task on gpu1, say), how many times faster the first did it,
by its speed and by its time (seed 003's P100 over K80: its total time and time to accuracy)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from .. import files, stats
from ..metrics import METRICS
from . import compared, markdown_table, read_appendix, verdict_columns

# The metrics a target is set against another by; which way is faster is each one's better end (Metric.best): a
# speed over the baseline's, the baseline's time over the target's
FASTER_BY = ("train_speed", "inference_speed", "time_to_accuracy", "total_time")
SAME = ["dataset", "network", "framework", "variant", "task", "device"]  # what a pair's two cells share
COLUMNS = ["target", "baseline", "metric", "unit", *SAME, "target_machine", "baseline_machine", "target_estimate",
           "baseline_estimate", "speedup", "speedup_low", "speedup_high", "speedup_text", "verdict", "target_cell",
           "baseline_cell"]


def against(appendix: pd.DataFrame, pairs: Sequence[Sequence[str]], threshold: float = stats.THRESHOLD
            ) -> pd.DataFrame:
    """For each pair (target, baseline) and each cell both measured (:data:`SAME`), the speed-up of the target:
    its speed over the baseline's, or the baseline's time over its own (:data:`FASTER_BY`), with its 95 % interval
    and verdict at ``threshold`` (dlbench.stats.ratio). A target that ran a cell on two machines has a row for each
    (a cell never averages machines)."""
    cells = appendix[appendix["metric"].isin(FASTER_BY) & (appendix["n"] > 0)]
    kept = ["metric", *SAME, "unit", "machine", "estimate", "n", "centre", "spread", "log", "cell"]
    found = []
    for target, baseline in pairs:
        both = cells[cells["hardware"] == target][kept].merge(
            cells[cells["hardware"] == baseline][kept].drop(columns="unit"), on=["metric", *SAME],
            suffixes=("_target", "_baseline"))
        sides = [{who: {what: row[f"{what}_{who}"] for what in kept[-5:-1]} for who in ("target", "baseline")}
                 for row in both.to_dict("records")]
        speedups = [compared(side["baseline"], side["target"], threshold) if METRICS[metric].best == "max"
                    else compared(side["target"], side["baseline"], threshold)  # a time: the baseline's over its
                    for side, metric in zip(sides, both["metric"])]
        ratios = verdict_columns(speedups, ("faster", "slower"))
        found.append(pd.DataFrame({"target": target, "baseline": baseline, **{key: both[key] for key in kept[:8]},
                                   **{f"{who}_{what}": both[f"{what}_{who}"] for what in ("machine", "estimate")
                                      for who in ("target", "baseline")},
                                   **{name.replace("ratio", "speedup"): values for name, values in ratios.items()},
                                   "target_cell": both["cell_target"], "baseline_cell": both["cell_baseline"]}))
    return pd.concat(found, ignore_index=True)[COLUMNS] if found else pd.DataFrame(columns=COLUMNS)


def markdown(speedups: pd.DataFrame, pairs: Sequence[Sequence[str]]) -> str:
    named = ", ".join(f"{target} over {baseline}" for target, baseline in pairs)
    if len(speedups):
        shown = speedups.assign(speedup=speedups["speedup_text"]).drop(
            columns=["target_estimate", "baseline_estimate", "speedup_low", "speedup_high", "speedup_text"])
        text = markdown_table(shown)
    else:
        text = (f"No cell ran on both targets of any pair ({named}) on the same device: nothing to set against "
                "each other.")
    return (f"# One hardware target over another ({named})\n\nHow many times faster the first target ran each cell "
            "both ran on the same device: by speed (its images/s over the baseline's) and by time (the baseline's "
            "seconds over its own), with its 95 % interval and verdict (docs/statistics.md). Seed 003's Time(s) and "
            "Acc tables in its layout are in accuracy.md.\n\n"
            + text + "\n")


def write(appendix_csv: Path, csv_out: Path, md_out: Path, pairs: Sequence[Sequence[str]],
          threshold: float = stats.THRESHOLD) -> None:
    speedups = against(read_appendix(appendix_csv), pairs, threshold)
    files.write_text(csv_out, speedups.to_csv(index=False))
    files.write_text(md_out, markdown(speedups, pairs))
