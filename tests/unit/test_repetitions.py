"""Repetitions as a target: Stein's two-stage number, and a case's decision from its first runs' records."""
import math

import numpy as np
import pytest
from dlbench import repetitions, stats
from dlbench.config import ConfigError
from dlbench.plan import Plan

from ..conftest import validated
from .tables.test_tables import record

AIM = repetitions.Target(min=3, max=10, ci=0.05)


def first_runs(speeds, contended=()):
    runs = []
    for repetition, speed in enumerate(speeds, 1):
        run = record(repetition=repetition, speed=speed)
        run["timing"]["contention_share"] = 0.4 if repetition in contended else 0.0
        runs.append({**run, "path": f"rep{repetition}.json"})
    return runs


def test_stein_plans_the_fewest_runs_whose_interval_at_the_first_runs_spread_is_within_the_width():
    first = stats.summarise([100, 108, 95])
    planned = stats.runs_for_width(first, 0.05)
    quantile = stats.stats.t.ppf(0.975, first.n - 1)  # the first stage's own degrees of freedom (Stein 1945)
    assert quantile * first.spread / math.sqrt(planned) <= math.log1p(0.05)
    assert quantile * first.spread / math.sqrt(planned - 1) > math.log1p(0.05)


def test_stein_plans_no_more_than_the_first_runs_where_they_are_already_narrow_enough():
    assert stats.runs_for_width(stats.summarise([100, 100.2, 99.9]), 0.05) == 3


def test_stein_says_past_the_most_and_refuses_a_first_stage_without_spread():
    assert stats.runs_for_width(stats.summarise([10, 100, 1000]), 0.01) == stats.MOST_REPETITIONS + 1
    with pytest.raises(ValueError, match="no spread"):
        stats.runs_for_width(stats.summarise([100]), 0.05)


def test_stein_reaches_the_width_in_most_simulated_cells():
    """Cells of cv 10 %: after the planned runs, each cell's interval (the tables', over all its runs) lies within
    ±5 % in most cells, though the first three alone almost never do."""
    draws = np.random.default_rng(1945)
    reached, first_reached = 0, 0
    for _ in range(500):
        first = np.exp(draws.normal(0, 0.1, 3))
        planned = min(stats.runs_for_width(stats.summarise(first), 0.05), 60)
        every = np.concatenate([first, np.exp(draws.normal(0, 0.1, planned - 3))])
        reached += stats.half_width(stats.summarise(every)) <= 0.05
        first_reached += stats.half_width(stats.summarise(first)) <= 0.05
    assert reached >= 0.8 * 500 and first_reached <= 0.05 * 500


def test_a_noisy_case_gets_more_runs_up_to_max_and_a_quiet_one_none():
    noisy = repetitions.decide(first_runs([1000, 1400, 700]), "train", AIM, "leave_out")
    quiet = repetitions.decide(first_runs([1000, 1002, 998]), "train", AIM, "leave_out")
    assert noisy["runs"] == AIM.max and "7 more (max 10)" in noisy["why"]
    assert quiet["runs"] == 3 and quiet["why"] == "reached: ±0.5% after 3 runs"


def test_a_contended_first_run_is_replaced():
    decision = repetitions.decide(first_runs([1000, 1002, 400], contended=[3]), "train", AIM, "leave_out")
    assert (decision["counted"], decision["not_counted"], decision["runs"]) == (2, 1, 4)
    kept = repetitions.decide(first_runs([1000, 1002, 998], contended=[3]), "train", AIM, "keep")
    assert kept["runs"] == 3


def test_first_runs_that_measured_nothing_plan_no_more():
    failed = [{**run, "status": "failed"} for run in first_runs([1000, 1000, 1000])]
    for run in failed:
        run["timing"]["images_per_second_mean"] = None
    decision = repetitions.decide(failed, "train", AIM, "leave_out")
    assert decision["runs"] == 3 and "no spread to plan from" in decision["why"]


def test_the_summary_names_the_cases_short_of_the_target_and_why():
    cases = {("pytorch", "mnist", "lenet", "cpu", "fp32", "train"): first_runs([1000, 1400, 700] + [1000] * 7),
             ("pytorch", "mnist", "mlp", "cpu", "fp32", "train"): first_runs([1000, 1002, 998])}
    said = repetitions.reached(cases, AIM, "leave_out")
    assert said.startswith("dlbench repetitions (95 % interval within ±5 % of the estimate, 3 to 10 runs): "
                           "1 of 2 cases reached it")
    assert "pytorch mnist lenet cpu fp32 train: ±" in said and "after 10 runs (max reached)" in said
    assert "mlp" not in said


CONFIG = {"frameworks": ["pytorch"], "environment": "current",
          "benchmarks": [{"dataset": "mnist", "data": "generated", "networks": ["lenet"],
                          "tasks": ["train", "accuracy"]}]}


def test_a_target_plans_min_runs_first_and_the_decided_ones_after_for_train_and_inference_only():
    plan = Plan(validated({**CONFIG, "repetitions": {"min": 2, "max": 4, "ci": 0.05}}))
    train, accuracy = sorted(plan.cases, key=lambda key: key[5] != "train")
    assert plan.adapts(train) and not plan.adapts(accuracy)
    assert [path.rsplit("/", 1)[1] for path in plan.records([train])] == ["rep1.json", "rep2.json"]
    decided = plan.records([train, accuracy], {train: 4}.get)
    assert [path.rsplit("/", 2)[1:] for path in decided] == [
        ["train", "rep1.json"], ["train", "rep2.json"], ["train", "rep3.json"], ["train", "rep4.json"],
        ["accuracy", "rep1.json"], ["accuracy", "rep2.json"]]


@pytest.mark.parametrize(("given", "said"), [({"min": 1, "max": 4, "ci": 0.05}, "min"),
                                              ({"min": 3, "max": 4}, "ci"),
                                              ({"min": 3, "max": 4, "ci": 1.5}, "ci")])
def test_a_target_the_schema_refuses(given, said):
    with pytest.raises(Exception, match=said):
        validated({**CONFIG, "repetitions": given})


def test_a_max_below_min_is_refused_naming_both():
    with pytest.raises(ConfigError, match="repetitions: max 2 is below min 3"):
        Plan(validated({**CONFIG, "repetitions": {"min": 3, "max": 2, "ci": 0.05}}))
