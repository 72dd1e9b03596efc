"""The release lines: each framework's speed, cell by cell, at every release of it the results hold (the thesis's
and today's, and those between), oldest first, and the steps along each line that the repetitions resolve
(:func:`dlbench.stats.line_steps`): ``release_points.csv`` (every release's cell), ``release_lines.csv`` (every
consecutive pair) and ``regressions.md`` (the steps)."""
from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path

import pandas as pd

from .. import files, stats
from ..envs import WORKER_PYTHONS
from ..metrics import METRICS, percent
from ..registry import REGISTRY, base_of, version_numbers
from . import CELL_KEYS, markdown_table, read_appendix, read_runs, summary

# The speed a line follows, per task: what the run's timed window measured
LINE_METRICS = {"train": "train_speed", "inference": "inference_speed"}
LINE_KEYS = [key for key in CELL_KEYS if key != "framework"]


def versions(runs: pd.DataFrame) -> dict[str, str]:
    """Each framework's exact version, as its ok runs recorded it (the most common, where runs of one framework
    name recorded several: a cell averages only equal runs)."""
    ok = runs[(runs["status"] == "ok") & runs["framework_version"].notna()]
    return {framework: Counter(group["framework_version"].astype(str)).most_common(1)[0][0]
            for framework, group in ok.groupby("framework")}


POINT_COLUMNS = ["framework", *LINE_KEYS, "metric", "release", "version", "released", "n", "estimate", "low", "high",
                 "centre", "spread", "log"]


def release_points(appendix: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Every release of each line of two or more (a base framework, a cell: dataset, network, where it ran, variant
    and task, the task's speed), oldest first: the release (its framework name), its exact version, its date, and its
    cell (n, estimate and 95 % interval, and what :func:`dlbench.tables.summary` reads)."""
    exact = versions(runs)
    speeds = appendix[(appendix["metric"] == appendix["task"].map(LINE_METRICS)) & (appendix["n"] > 0)
                      & appendix["framework"].isin(exact)]
    speeds = speeds.assign(release=speeds["framework"], framework=speeds["framework"].map(base_of),
                           version=speeds["framework"].map(exact),
                           released=speeds["framework"].map(lambda name: getattr(REGISTRY.get(name), "released", "")))
    lines = [line.iloc[sorted(range(len(line)), key=lambda i: version_numbers(line["version"].iloc[i]))]
             for _, line in speeds.groupby(["framework", *LINE_KEYS], sort=True, dropna=False)
             if line["release"].nunique() > 1]
    return pd.concat(lines)[POINT_COLUMNS] if lines else pd.DataFrame(columns=POINT_COLUMNS)


def release_lines(points: pd.DataFrame, threshold: float = stats.THRESHOLD) -> pd.DataFrame:
    """Each line of :func:`release_points` as its consecutive pairs, each later release over the one before it: the
    two versions, both estimates, the ratio with its interval and its verdict (:func:`dlbench.stats.line_steps`), and
    whether it is a step."""
    rows = []
    for (base, *cell), line in points.groupby(["framework", *LINE_KEYS], sort=False, dropna=False):
        cells = [(row.version, summary(row._asdict())) for row in line.itertuples()]
        faster, slower = METRICS[line["metric"].iloc[0]].comparative
        for (before, after, found), (earlier, later), harnesses in zip(
                stats.line_steps(cells, threshold), itertools.pairwise(cells),
                itertools.pairwise(line["release"].map(harness))):
            rows.append({"framework": base, **dict(zip(LINE_KEYS, cell)), "metric": line["metric"].iloc[0],
                         "before": before, "after": after, "before_estimate": earlier[1].estimate,
                         "after_estimate": later[1].estimate, "ratio": found.value, "ratio_low": found.low,
                         "ratio_high": found.high, "ratio_text": found.text(), "verdict": found.words(faster, slower),
                         "step": found.verdict in (stats.HIGHER, stats.LOWER),
                         "also_changed": "" if len(set(harnesses)) == 1 else " → ".join(harnesses)})
    return pd.DataFrame(rows, columns=["framework", *LINE_KEYS, "metric", "before", "after", "before_estimate",
                                       "after_estimate", "ratio", "ratio_low", "ratio_high", "ratio_text", "verdict",
                                       "step", "also_changed"])


def harness(release: str) -> str:
    """What ran a release besides the release itself: its backend, and its worker's interpreter where it has one
    (a release between two harnesses measures both changes at once)."""
    entry = REGISTRY.get(release)
    if entry is None:
        return "unknown"
    return f"backends/{entry.module}.py" + (f" in a CPython {WORKER_PYTHONS[entry.environment][0]} worker"
                                           if entry.environment in WORKER_PYTHONS else "")


def markdown(pairs: pd.DataFrame, threshold: float = stats.THRESHOLD) -> str:
    """regressions.md: each step named by its releases, with its ratio and interval; else that none was found,
    and in how many pairs of how many lines."""
    lines = pairs.groupby(["framework", *LINE_KEYS], dropna=False).ngroups if len(pairs) else 0
    said = (f"# Steps along the release lines\n\nEach release's speed over the release before it in the same cell "
            f"(dataset, network, device, variant, task), with its 95 % interval, Bonferroni-corrected for the "
            f"pairs of its line; a step is a ratio whose interval excludes 1 and which lies beyond the "
            f"±{percent(threshold)} threshold ({len(pairs)} pairs in {lines} lines; docs/statistics.md).\n\n")
    steps = pairs[pairs["step"].astype(bool)]
    if steps.empty:
        return said + f"No step: no pair of consecutive releases differs beyond the threshold in {len(pairs)} pairs.\n"
    shown = steps.assign(between=[f"between {row.before} and {row.after}: {row.ratio_text}"
                                  for row in steps.itertuples()],
                         also_changed=steps["also_changed"].fillna(""))
    said += ("A step whose two releases ran in different harnesses (*also changed*: today's backend in the runner's "
             "process against a worker's on an older CPython) measures the harness's change with the release's.\n\n"
             if (shown["also_changed"] != "").any() else "")
    return said + markdown_table(shown[["framework", *[key for key in LINE_KEYS if key != "machine"], "machine",
                                        "metric", "between", "verdict", "also_changed"]]) + "\n"


def write(appendix_csv: Path, runs_csv: Path, points_out: Path, pairs_out: Path, md_out: Path,
          threshold: float = stats.THRESHOLD) -> None:
    points = release_points(read_appendix(appendix_csv), read_runs(runs_csv))
    pairs = release_lines(points, threshold)
    files.write_text(points_out, points.to_csv(index=False))
    files.write_text(pairs_out, pairs.to_csv(index=False))
    files.write_text(md_out, markdown(pairs, threshold))
