"""The statistics every table, figure and comparison prints, as pure functions (docs/statistics.md defines each
term and names the methods).

- A **cell**'s repetitions are independent processes, the unit of replication (Georges, Buytaert and Eeckhout,
  "Statistically Rigorous Java Performance Evaluation", OOPSLA 2007). Its estimate and 95 % confidence interval are
  Student's t over the runs' values, on the log scale for a metric of positive values (a speed, a time), so that
  the interval of a ratio is symmetric in the ratio and its inverse: :func:`summarise`, :func:`interval`.
- A **ratio** of two cells (B over A) is Welch's t interval of the difference of their log means, with
  Welch-Satterthwaite's degrees of freedom, turned back into a ratio (for a metric of a linear scale, the interval
  of the difference over A's mean), and a **verdict**: higher or lower where the interval excludes 1 and the
  estimate lies beyond the practical threshold (asv's factor, Criterion.rs's noise threshold), the same where the
  whole interval lies within the threshold, else not resolved, with the repetitions per cell that would resolve it
  at the spread observed: :func:`ratio`.
- **Repetitions as a target**: Stein's two-stage procedure plans, from a cell's first runs, the runs whose interval
  would reach a width: :func:`runs_for_width`.
- **Steps along a release line**: each release's cell over the one before it, judged as a ratio is at a confidence
  Bonferroni-corrected for the line's pairs (asv's step detection over a project's history, with intervals):
  :func:`line_steps`.
- **Steady state** within a run: its timed steps' first half against their second (Mann-Whitney U) and their
  trend (Kendall's tau); a run whose median step moved by more than the threshold, significantly, had not settled
  (Barrett et al., "Virtual Machine Warmup Blows Hot and Cold", OOPSLA 2017): :func:`steady_state`.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
THRESHOLD = 0.05  # a ratio within 5 % of 1 is no practical difference (config statistics.threshold)
STEADY_P = 0.01  # a steady-state test this significant, with the shift beyond STEADY_SHIFT, marks a run
STEADY_SHIFT = 0.05  # the change of the median step between a run's halves that counts as not settled
STEADY_MIN_STEPS = 8  # fewer timed steps cannot reach that significance in halves of four (Mann-Whitney U)
MOST_REPETITIONS = 100  # beyond this, "more than 100": the spread would need a different experiment

# Verdicts of a ratio B ÷ A
HIGHER, LOWER, SAME, NOT_RESOLVED = "higher", "lower", "same", "not resolved"


@dataclass(frozen=True)
class Summary:
    """A cell's values in what its intervals and ratios need: how many, their centre and spread on the cell's
    scale (the mean and sd of their logarithms on the log scale), and whether that scale is the log's."""
    n: int
    centre: float
    spread: float  # the sample sd (ddof 1); nan for fewer than two values
    log: bool

    @property
    def estimate(self) -> float:
        """The cell's point estimate: the geometric mean on the log scale, else the mean."""
        return math.exp(self.centre) if self.log else self.centre


def summarise(values: Sequence[float], log: bool = True) -> Summary:
    """``values`` (a cell's runs) on the log scale where ``log`` and every value is above 0, else linear."""
    values = np.asarray(values, dtype=float)
    log = bool(log and len(values) and (values > 0).all())
    on_scale = np.log(values) if log else values
    if not len(values):
        return Summary(0, math.nan, math.nan, log)
    return Summary(len(values), float(on_scale.mean()), float(on_scale.std(ddof=1)) if len(values) > 1 else math.nan,
                   log)


def interval(summary: Summary, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The two-sided Student's t interval of the cell's estimate; (nan, nan) for fewer than two runs."""
    if summary.n < 2:
        return math.nan, math.nan
    half = stats.t.ppf((1 + confidence) / 2, summary.n - 1) * summary.spread / math.sqrt(summary.n)
    low, high = summary.centre - half, summary.centre + half
    return (math.exp(low), math.exp(high)) if summary.log else (low, high)


@dataclass(frozen=True)
class Ratio:
    """B ÷ A: the estimate, its interval, the verdict, and where not resolved the repetitions per cell that would
    resolve it at the observed spread (None: resolved, or no spread to judge by; ``MOST_REPETITIONS + 1``: more
    than :data:`MOST_REPETITIONS`)."""
    value: float
    low: float
    high: float
    verdict: str
    needed: int | None = None
    why: str = ""  # why there is no interval (a cell of one run)
    each: bool = True  # whether ``needed`` is of both cells (a ratio of two), else of the one (over a published value)

    def words(self, higher: str = HIGHER, lower: str = LOWER) -> str:
        """The verdict as a table prints it, in the metric's words for higher and lower (faster, slower)."""
        said = {HIGHER: higher, LOWER: lower}.get(self.verdict, self.verdict)
        if self.verdict != NOT_RESOLVED:
            return said
        if self.why:
            return f"{said} ({self.why})"
        if self.needed is None:
            return said
        each = " each" if self.each else ""
        if self.needed > MOST_REPETITIONS:
            return f"{said} (more than {MOST_REPETITIONS} runs{each} would be needed)"
        return f"{said} (about {self.needed} runs{each} would resolve it)"

    def text(self) -> str:
        """``×1.23 [1.10, 1.38]``; ``×1.23`` where there is no interval."""
        if math.isnan(self.value):
            return "—"
        bounds = "" if math.isnan(self.low) else f" [{self.low:.3g}, {self.high:.3g}]"
        return f"×{self.value:.3g}{bounds}"


def _welch(a: Summary, b: Summary) -> tuple[float, float]:
    """The standard error of the difference of the two centres and Welch-Satterthwaite's degrees of freedom."""
    va, vb = a.spread ** 2 / a.n, b.spread ** 2 / b.n
    se = math.sqrt(va + vb)
    if se == 0:
        return 0.0, float(a.n + b.n - 2)
    return se, (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1))


def ratio(a: Summary, b: Summary, threshold: float = THRESHOLD, confidence: float = CONFIDENCE) -> Ratio:
    """B ÷ A with its interval and verdict (module docstring). On the log scale where both cells are; else the
    interval of the difference B - A over A's estimate. A cell without runs gives no ratio; a cell of one run, a
    ratio without interval, not resolved."""
    if not (a.n and b.n) or (not (a.log and b.log) and a.estimate == 0):
        return Ratio(math.nan, math.nan, math.nan, NOT_RESOLVED, why="a cell has no value")
    if a.log != b.log:  # a speed's cell with a value of 0 or below fell back to the linear scale
        return Ratio(math.nan, math.nan, math.nan, NOT_RESOLVED, why="a cell holds a value of 0 or below")
    log = a.log
    value = math.exp(b.centre - a.centre) if log else b.centre / a.centre
    if a.n < 2 or b.n < 2:
        return Ratio(value, math.nan, math.nan, NOT_RESOLVED, why="a cell of one run has no interval")
    se, df = _welch(a, b)
    half = stats.t.ppf((1 + confidence) / 2, df) * se
    difference = b.centre - a.centre
    if log:
        low, high = math.exp(difference - half), math.exp(difference + half)
    else:
        low, high = 1 + (difference - half) / a.centre, 1 + (difference + half) / a.centre
    judged = _judged(value, low, high, threshold)
    if judged.verdict != NOT_RESOLVED:
        return judged
    return dataclasses.replace(judged, needed=repetitions_needed(a, b, threshold, confidence))


def over_published(cell: Summary, published: float, threshold: float = THRESHOLD,
                   confidence: float = CONFIDENCE) -> Ratio:
    """A cell over a published number that comes without a spread (the thesis's Appendix A): the cell's estimate
    and interval over it, judged as :func:`ratio` judges, the number taken as exact."""
    if not cell.n or not published > 0:
        return Ratio(math.nan, math.nan, math.nan, NOT_RESOLVED, why="a cell has no value")
    if cell.n < 2:
        return Ratio(cell.estimate / published, math.nan, math.nan, NOT_RESOLVED,
                     why="a cell of one run has no interval")
    low, high = (bound / published for bound in interval(cell, confidence))
    judged = _judged(cell.estimate / published, low, high, threshold)
    if judged.verdict != NOT_RESOLVED:
        return judged
    effect = abs(cell.centre - math.log(published)) if cell.log else abs(cell.estimate / published - 1)
    variance = cell.spread ** 2 if cell.log else (cell.spread / published) ** 2
    return dataclasses.replace(judged, each=False, needed=_runs_to_resolve(effect, variance, threshold, cell.log,
                                                                           _t_quantiles(confidence, 1)))


def _judged(value: float, low: float, high: float, threshold: float) -> Ratio:
    """The verdict of a ratio and its interval (module docstring): higher or lower, the same, or not resolved."""
    bound = math.log1p(threshold)  # a factor of 1 + threshold either way, symmetric on the log scale
    effect = math.log(value) if value > 0 else -math.inf
    excludes_one = low > 1 or high < 1
    if excludes_one and abs(effect) > bound:
        return Ratio(value, low, high, HIGHER if value > 1 else LOWER)
    if low > 0 and abs(math.log(low)) < bound and abs(math.log(high)) < bound:
        return Ratio(value, low, high, SAME)
    return Ratio(value, low, high, NOT_RESOLVED)


def repetitions_needed(a: Summary, b: Summary, threshold: float = THRESHOLD, confidence: float = CONFIDENCE) -> int:
    """Runs per cell (the same in both) that would resolve B ÷ A if the ratio and the spreads stayed as observed:
    an interval that excludes 1 where the estimate lies beyond the threshold, else one within the threshold.
    ``MOST_REPETITIONS + 1`` where even that many would not (an estimate on the threshold itself)."""
    log = a.log and b.log
    effect = abs(b.centre - a.centre) if log else abs(b.centre - a.centre) / abs(a.centre)
    variance = (a.spread ** 2 + b.spread ** 2) if log else (a.spread ** 2 + b.spread ** 2) / a.centre ** 2
    return _runs_to_resolve(effect, variance, threshold, log, _t_quantiles(confidence, 2))


def runs_for_width(first: Summary, width: float, confidence: float = CONFIDENCE) -> int:
    """Stein's two-stage sample size ("A two-sample test for a linear hypothesis whose power is independent of the
    variance", Ann. Math. Statist. 1945): the runs in all whose interval's half-width would be at most ``width`` of
    the estimate (a factor of 1 + ``width`` on the log scale), from the spread of the ``first`` runs and Student's
    t at their own degrees of freedom, never fewer than they are. ``MOST_REPETITIONS + 1`` past the most."""
    if first.n < 2 or math.isnan(first.spread):
        raise ValueError(f"a first stage of {first.n} run(s) has no spread to plan from")
    bound = math.log1p(width) if first.log else width * abs(first.centre)
    quantile = stats.t.ppf((1 + confidence) / 2, first.n - 1)
    runs = math.ceil((quantile * first.spread / bound) ** 2) if bound > 0 else math.inf
    return max(first.n, min(runs, MOST_REPETITIONS + 1))


def half_width(summary: Summary, confidence: float = CONFIDENCE) -> float:
    """The interval's half-width as a fraction of the estimate (on the log scale the factor's excess over 1, high
    over estimate minus 1); nan for fewer than two runs."""
    low, high = interval(summary, confidence)
    return high / summary.estimate - 1 if summary.log else (high - low) / 2 / abs(summary.estimate)


def _runs_to_resolve(effect: float, variance: float, threshold: float, log: bool, quantiles: np.ndarray) -> int:
    """The fewest runs n (from 2) whose interval, ``quantiles[n - 2]`` times the standard error of ``variance``
    over n runs, would resolve ``effect``: exclude 0 where it lies beyond the threshold, else stay within it."""
    bound = math.log1p(threshold) if log else threshold
    room = effect if effect > bound else bound - effect  # what the interval's half-width must fall below
    runs = np.arange(2, MOST_REPETITIONS + 1)
    enough = runs[quantiles * np.sqrt(variance / runs) < room]
    return int(enough[0]) if len(enough) else MOST_REPETITIONS + 1


@functools.cache
def _t_quantiles(confidence: float, cells: int) -> np.ndarray:
    """Student's t quantile of ``cells`` cells of n runs each (n - 1 degrees of freedom each), for n from 2 to the
    most."""
    return stats.t.ppf((1 + confidence) / 2, cells * (np.arange(2, MOST_REPETITIONS + 1) - 1))


@dataclass(frozen=True)
class Steadiness:
    """A run's timed steps judged for steady state: ``shift``, the second half's median step over the first's
    less 1 (below 0: the run sped up, still warming up); ``p``, the smaller p-value of the two tests; ``steady``,
    False where a test is significant at :data:`STEADY_P` and the shift beyond :data:`STEADY_SHIFT`, None where
    there are too few steps to judge."""
    shift: float
    p: float
    steady: bool | None


def steady_state(step_seconds: Sequence[float]) -> Steadiness:
    """Whether a run's timed steps had settled: their halves by Mann-Whitney U (a change point between them) and
    their order by Kendall's tau (a trend); fewer than :data:`STEADY_MIN_STEPS` steps are not judged."""
    steps = np.asarray(step_seconds, dtype=float)
    if len(steps) < STEADY_MIN_STEPS:
        return Steadiness(math.nan, math.nan, None)
    if np.ptp(steps) == 0:  # every step alike: nothing moved (and no rank test is defined)
        return Steadiness(0.0, 1.0, True)
    first, second = steps[: len(steps) // 2], steps[len(steps) - len(steps) // 2:]
    shift = float(np.median(second) / np.median(first) - 1)
    halves = stats.mannwhitneyu(first, second, alternative="two-sided").pvalue
    trend = stats.kendalltau(np.arange(len(steps)), steps).pvalue
    p = float(np.nanmin([halves, trend]))
    return Steadiness(shift, p, not (p < STEADY_P and abs(shift) > STEADY_SHIFT))


def ranks(cells: Mapping[str, Summary], higher_first: bool = True, threshold: float = THRESHOLD) -> dict[str, int]:
    """Each cell's rank among ``cells`` (1: the best, the highest where ``higher_first``): one more than the number
    of cells resolved better than it (:func:`ratio`'s verdict), so that cells the repetitions cannot order share
    a rank, and a cell is ranked below another only where the runs resolve it."""
    better = HIGHER if higher_first else LOWER
    return {name: 1 + sum(ratio(cell, other, threshold).verdict == better
                          for other_name, other in cells.items() if other_name != name)
            for name, cell in cells.items()}


def line_steps(points: Sequence[tuple[str, Summary]], threshold: float = THRESHOLD, confidence: float = CONFIDENCE
               ) -> list[tuple[str, str, Ratio]]:
    """A line's consecutive points (a framework's releases, oldest first) compared as two cells are, each later one
    over the one before (:func:`ratio`), at a confidence corrected for the line's pairs by Bonferroni's rule, so that
    a line of many releases calls a step where there is none no more often than a single pair would (the family-wise
    error rate). Every pair with its ratio: a *step* is a pair judged higher or lower, asv's test of a history's
    segments against its factor, with an interval beside it."""
    pairs = list(itertools.pairwise(points))
    corrected = 1 - (1 - confidence) / max(len(pairs), 1)
    return [(before, after, ratio(earlier, later, threshold, corrected))
            for (before, earlier), (after, later) in pairs]
