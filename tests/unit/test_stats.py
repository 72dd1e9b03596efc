"""dlbench.stats on simulated draws with known truth (fixed seeds): the intervals cover it as often as they claim,
the verdicts are not fooled by noise (A/A) and find a real difference, and steady state is judged on step series
whose true shape is known."""
import math

import numpy as np
import pytest
from dlbench import stats

CELLS = 2000


def lognormal_cells(rng, n: int, cv: float, true: float = 100.0, cells: int = CELLS) -> np.ndarray:
    """``cells`` cells of ``n`` runs each, lognormal with geometric mean ``true`` and coefficient of variation
    ``cv`` (a speed's runs: positive, right-skewed)."""
    sigma = math.sqrt(math.log1p(cv ** 2))
    return true * np.exp(rng.normal(0.0, sigma, size=(cells, n)))


@pytest.mark.parametrize("n", [3, 5, 10])
@pytest.mark.parametrize("cv", [0.02, 0.05, 0.10, 0.20])
def test_a_cells_interval_covers_the_true_value_95_percent_of_the_time(n, cv):
    rng = np.random.default_rng(67 * n + int(cv * 100))
    covered = 0
    for values in lognormal_cells(rng, n, cv):
        low, high = stats.interval(stats.summarise(values))
        covered += low <= 100.0 <= high
    assert abs(covered / CELLS - 0.95) <= 0.02


def test_a_cell_of_one_run_has_its_value_and_no_interval():
    summary = stats.summarise([123.0])
    assert summary.estimate == pytest.approx(123.0)
    assert all(math.isnan(bound) for bound in stats.interval(summary))
    ratio = stats.ratio(summary, stats.summarise([150.0, 151.0]))
    assert ratio.verdict == stats.NOT_RESOLVED and "one run" in ratio.why
    assert ratio.value == pytest.approx(150.5 / 123.0, rel=1e-3) and ratio.text() == f"×{ratio.value:.3g}"


def test_a_speeds_ratio_is_symmetric_in_it_and_its_inverse():
    a, b = stats.summarise([100.0, 104.0, 97.0]), stats.summarise([120.0, 131.0, 118.0, 125.0])
    forward, backward = stats.ratio(a, b), stats.ratio(b, a)
    assert forward.value == pytest.approx(1 / backward.value)
    assert (forward.low, forward.high) == pytest.approx((1 / backward.high, 1 / backward.low))
    assert {forward.verdict, backward.verdict} == {stats.HIGHER, stats.LOWER}


def verdicts(rng, n: int, cv: float, truth: float) -> dict[str, float]:
    """The share of each verdict over simulated pairs of cells whose true ratio B ÷ A is ``truth``."""
    a, b = lognormal_cells(rng, n, cv), lognormal_cells(rng, n, cv, true=100.0 * truth)
    said = [stats.ratio(stats.summarise(x), stats.summarise(y)).verdict for x, y in zip(a, b)]
    return {verdict: said.count(verdict) / len(said) for verdict in (stats.HIGHER, stats.LOWER, stats.SAME,
                                                                      stats.NOT_RESOLVED)}


@pytest.mark.parametrize("n", [2, 3, 5, 10])
@pytest.mark.parametrize("cv", [0.02, 0.08, 0.20])
def test_an_a_a_comparison_is_called_faster_or_slower_in_at_most_5_percent(n, cv):
    shares = verdicts(np.random.default_rng(1000 + n), n, cv, truth=1.0)
    assert shares[stats.HIGHER] + shares[stats.LOWER] <= 0.05


def test_a_true_20_percent_difference_at_cv_5_percent_and_5_runs_is_called_in_at_least_80_percent():
    shares = verdicts(np.random.default_rng(20), 5, 0.05, truth=1.2)
    assert shares[stats.HIGHER] >= 0.80 and shares[stats.LOWER] == 0


def test_quiet_equal_cells_are_the_same_and_noisy_ones_not_resolved_with_the_runs_that_would_resolve_them():
    quiet = verdicts(np.random.default_rng(3), 10, 0.005, truth=1.0)
    assert quiet[stats.SAME] >= 0.95
    a, b = stats.summarise([100.0, 120.0, 90.0]), stats.summarise([110.0, 95.0, 125.0])
    unresolved = stats.ratio(a, b)
    assert unresolved.verdict == stats.NOT_RESOLVED and unresolved.needed > 3
    assert f"about {unresolved.needed} runs each" in unresolved.words()
    # At the runs it asks for, the same spreads and ratio do resolve it
    wider = stats.Summary(unresolved.needed, b.centre, b.spread, True)
    assert stats.ratio(stats.Summary(unresolved.needed, a.centre, a.spread, True), wider).verdict != \
        stats.NOT_RESOLVED


def test_a_ratio_on_the_threshold_itself_asks_for_more_runs_than_the_most_it_counts():
    a = stats.Summary(3, math.log(100.0), 0.05, True)
    b = stats.Summary(3, math.log(100.0 * 1.05), 0.05, True)
    ratio = stats.ratio(a, b)
    assert ratio.verdict == stats.NOT_RESOLVED and ratio.needed > stats.MOST_REPETITIONS
    assert ratio.words() == f"not resolved (more than {stats.MOST_REPETITIONS} runs each would be needed)"


def test_a_cell_over_a_published_value_takes_that_value_as_exact():
    """The thesis's Appendix A gives one number per cell: our cell's interval over it, judged as a ratio is."""
    cell = stats.summarise([1980.0, 2020.0, 2000.0])
    faster = stats.over_published(cell, 1448.0)
    assert faster.value == pytest.approx(cell.estimate / 1448) and faster.verdict == stats.HIGHER
    assert (faster.low, faster.high) == pytest.approx(tuple(bound / 1448 for bound in stats.interval(cell)))
    close = stats.over_published(stats.summarise([1900.0, 2100.0, 2000.0]), 1960.0)
    assert close.verdict == stats.NOT_RESOLVED and close.needed > 3
    assert close.words() == f"not resolved (about {close.needed} runs would resolve it)"
    assert stats.over_published(cell, math.nan).words() == "not resolved (a cell has no value)"
    assert stats.over_published(stats.summarise([2000.0]), 1448.0).why == "a cell of one run has no interval"


def test_the_verdict_is_said_in_the_metrics_words():
    a, b = stats.summarise([100.0, 101.0, 99.0]), stats.summarise([150.0, 151.0, 149.0])
    assert stats.ratio(a, b).words("faster", "slower") == "faster"
    assert stats.ratio(b, a).words("faster", "slower") == "slower"


def test_a_metric_with_values_of_0_or_below_is_compared_on_the_linear_scale():
    a, b = stats.summarise([-0.02, 0.01, 0.0]), stats.summarise([0.30, 0.31, 0.29])
    assert not a.log and b.log
    assert stats.summarise([0.1, 0.2], log=False).estimate == pytest.approx(0.15)
    assert stats.ratio(stats.summarise([1.0, 2.0]), a).why == "a cell holds a value of 0 or below"
    linear = stats.ratio(stats.summarise([0.30, 0.31, 0.29], log=False), stats.summarise([0.60, 0.61, 0.59],
                                                                                          log=False))
    assert linear.verdict == stats.HIGHER and linear.value == pytest.approx(2.0)
    assert linear.low < 2.0 < linear.high


def test_steps_that_settled_are_steady_and_steps_still_warming_up_are_not():
    rng = np.random.default_rng(5)
    flat = 0.010 * np.exp(rng.normal(0, 0.03, 40))
    assert stats.steady_state(flat).steady is True
    warming = flat * np.linspace(1.5, 1.0, 40)  # each step faster than the one before, by a third over the run
    judged = stats.steady_state(warming)
    assert judged.steady is False and judged.shift < -0.1 and judged.p < stats.STEADY_P
    stepped = np.concatenate([flat[:20] * 1.3, flat[20:]])  # a change point between the halves
    assert stats.steady_state(stepped).steady is False


def test_a_single_spike_does_not_make_a_run_unsteady_and_too_few_steps_are_not_judged():
    steps = np.full(30, 0.010) * np.exp(np.random.default_rng(8).normal(0, 0.02, 30))
    steps[7] = 0.05  # a step five times the median, as CNTK's reader gives
    assert stats.steady_state(steps).steady is True
    assert stats.steady_state([0.01] * 7).steady is None


def test_cells_the_repetitions_cannot_order_share_a_rank():
    cells = {"fast": stats.summarise([200.0, 202.0, 198.0]), "close": stats.summarise([180.0, 215.0, 195.0]),
             "slow": stats.summarise([100.0, 101.0, 99.0])}
    assert stats.ranks(cells) == {"fast": 1, "close": 1, "slow": 3}
    assert stats.ranks(cells, higher_first=False) == {"fast": 2, "close": 2, "slow": 1}
    one_run = {"a": stats.summarise([200.0]), "b": stats.summarise([100.0, 101.0])}
    assert stats.ranks(one_run) == {"a": 1, "b": 1}  # a cell of one run orders nothing
