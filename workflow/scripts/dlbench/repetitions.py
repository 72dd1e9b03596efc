"""Repetitions as a target (config ``repetitions: {min, max, ci}``; docs/statistics.md): every case runs ``min``
times; then, for each train and inference case, the ``repetitions`` checkpoint plans from those runs the runs in all
whose 95 % interval of the task's speed would lie within ``ci`` of the estimate (Stein's two-stage procedure,
:func:`dlbench.stats.runs_for_width`), up to ``max``. A first run that does not count in the estimate (contended and
left out, failed) is replaced. The other tasks (accuracy curves, profiles) judge no interval and run ``min`` times.
After the runs, :func:`reached` says which cases reached the target and why the others did not."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from . import stats
from .config import ConfigError
from .metrics import METRICS
from .tables.appendix import counted
from .tables.runs import runs_table

ADAPTED = {"train": "train_speed", "inference": "inference_speed"}  # a task: the metric its target's interval is of
DECISION = "results/repetitions/{framework}/{dataset}/{network}/{placement}/{variant}/{task}.json"


@dataclass(frozen=True)
class Target:
    """How many runs a case makes: ``min``, and with ``ci`` (a fraction of the estimate) up to ``max`` where the
    interval of the first is wider than that. A fixed number is a target whose three agree."""
    min: int
    max: int
    ci: float | None = None

    def adapts(self, task: str) -> bool:
        return self.ci is not None and self.max > self.min and task in ADAPTED

    def words(self) -> str:
        return f"95 % interval within ±{self.ci_words} of the estimate, {self.min} to {self.max} runs"

    @property
    def ci_words(self) -> str:
        return f"{self.ci * 100:.3g} %"


def target(config: dict) -> Target:
    """The config's ``repetitions`` (validated by the schema: a whole number, or min, max and ci)."""
    given = config["repetitions"]
    if isinstance(given, int):
        return Target(given, given)
    if given["max"] < given["min"]:
        raise ConfigError(f"repetitions: max {given['max']} is below min {given['min']}")
    return Target(given["min"], given["max"], given["ci"])


def _speeds(records: list[dict], task: str, contended: str) -> tuple[stats.Summary, int]:
    """The summary of the runs that count in the estimate of the task's speed (dlbench.tables.appendix.counted:
    ok, measured, contended ones left out where two clean remain), and how many of ``records`` do not count."""
    metric = ADAPTED[task]
    kept, _ = counted(runs_table(records), metric, contended)
    return stats.summarise(kept[metric].astype(float), METRICS[metric].log), len(records) - len(kept)


def decide(records: list[dict], task: str, aim: Target, contended: str) -> dict:
    """From a case's first runs (``records``, read with their paths): how many runs it makes in all (``runs``),
    with the numbers that decided it and why, in words."""
    first, not_counted = _speeds(records, task, contended)
    decision = {"metric": ADAPTED[task], "target": asdict(aim), "first_runs": len(records), "counted": first.n,
                "not_counted": not_counted, "half_width": None, "planned": None}
    if first.n < 2:
        return {**decision, "runs": len(records),
                "why": f"{first.n} of the first {len(records)} runs measured {ADAPTED[task]}: no spread to plan from"}
    # min counted runs at least: a run that does not count is replaced
    width, planned = stats.half_width(first), max(aim.min, stats.runs_for_width(first, aim.ci))
    runs = min(aim.max, len(records) + max(0, planned - first.n))
    if runs == len(records):
        why = f"reached: ±{width:.1%} after {len(records)} runs"
    else:
        would = f"more than {stats.MOST_REPETITIONS}" if planned > stats.MOST_REPETITIONS else f"{planned}"
        why = (f"±{width:.1%} after {len(records)} runs ({first.n} counted): {would} counted runs would reach "
               f"±{aim.ci_words}; {runs - len(records)} more" + (f" (max {aim.max})" if runs == aim.max else ""))
    return {**decision, "half_width": width, "planned": planned, "runs": runs, "why": why}


def reached(cases: dict[tuple, list[dict]], aim: Target, contended: str) -> str:
    """The run's summary of a target: per adapted case (key -> its runs' records, read), whether its interval now
    lies within ``ci``, and where not why: ``max`` reached, runs not counted, or the later runs spreading more than
    the first (the planned number was the first runs' estimate)."""
    short, met = [], 0
    for key, records in sorted(cases.items()):
        summary, not_counted = _speeds(records, key[5], contended)
        width = stats.half_width(summary) if summary.n >= 2 else None
        if width is not None and width <= aim.ci:
            met += 1
            continue
        why = ("max reached" if len(records) >= aim.max else
               f"{not_counted} of {len(records)} runs not counted" if not_counted else
               "its later runs spread more than its first")
        said = "no interval" if width is None else f"±{width:.1%}"
        short.append(f"    {' '.join(key)}: {said} after {len(records)} runs ({why})")
    head = f"dlbench repetitions ({aim.words()}): {met} of {len(cases)} cases reached it"
    return "\n".join([head, *short])
