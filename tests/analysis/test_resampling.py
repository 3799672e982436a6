"""Bootstrap intervals over tasks and the sign-flip test, checked against direct computations."""

from __future__ import annotations

import random
from math import comb, sqrt

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_metrics import row

from occusim.analysis import compute_metrics
from occusim.analysis._metrics import rate_of
from occusim.analysis._resampling import ratio_interval, sign_flip_p_value

Z95 = 1.959964


def one_trial_tasks(passes: int, tasks: int, *, trials: int = 1) -> list:
    """`tasks` tasks whose trials all share the task's outcome; the first `passes` tasks pass."""
    return [row(f"s/t{index}", "E0", trial, index < passes) for index in range(tasks) for trial in range(trials)]


def wald_width(p: float, n: int) -> float:
    return 2 * Z95 * sqrt(p * (1 - p) / n)


def test_interval_matches_the_normal_approximation_on_many_independent_tasks():
    rate = rate_of(one_trial_tasks(120, 400))
    p = 120 / 400
    half = Z95 * sqrt(p * (1 - p) / 400)

    assert rate.ci is not None
    assert rate.ci.low == pytest.approx(p - half, abs=0.01)
    assert rate.ci.high == pytest.approx(p + half, abs=0.01)


def test_trials_of_one_task_are_not_counted_as_independent():
    """Ten identical trials per task carry the information of one: the interval must not shrink by sqrt(10)."""
    clustered = rate_of(one_trial_tasks(12, 40, trials=10)).ci
    single = rate_of(one_trial_tasks(12, 40)).ci
    assert clustered is not None and single is not None

    width = clustered.high - clustered.low
    assert width == pytest.approx(single.high - single.low, rel=0.2)
    assert width > 2 * wald_width(0.3, 400)  # what treating 400 trials as independent would give


def test_interval_contains_the_estimate_and_narrows_with_more_tasks():
    small, large = rate_of(one_trial_tasks(6, 20)), rate_of(one_trial_tasks(60, 200))
    assert small.ci is not None and large.ci is not None

    assert small.ci.low <= small.rate <= small.ci.high
    assert large.ci.low <= large.rate <= large.ci.high
    assert large.ci.high - large.ci.low < small.ci.high - small.ci.low


def test_interval_is_deterministic_and_independent_of_row_order():
    rows = [row(f"s/t{index % 7}", "E0", index, index % 3 == 0) for index in range(35)]
    shuffled = rows[:]
    random.Random(4).shuffle(shuffled)

    assert rate_of(rows).ci == rate_of(shuffled).ci == rate_of(rows).ci


def test_no_interval_from_a_single_task():
    assert rate_of(one_trial_tasks(1, 1, trials=5)).ci is None
    assert ratio_interval([1.0], [2.0]) is None


def test_every_reported_rate_has_its_interval():
    metrics = compute_metrics(one_trial_tasks(5, 12) + [row(f"s/t{i}", "E2", 0, i % 2 == 0) for i in range(12)])

    for rate in (metrics.completion, *metrics.by_fault_mode.values(), *metrics.by_category.values(),
                 *metrics.by_category_and_mode["Healthcare & Life Sciences"].values()):
        assert rate.ci is not None and rate.ci.low <= rate.rate <= rate.ci.high
    assert metrics.robustness.ci is not None
    assert metrics.robustness.ci.low <= metrics.robustness.value <= metrics.robustness.ci.high
    assert metrics.pass_at_k_ci[1] is not None
    assert metrics.pass_at_k_ci[1].low <= metrics.pass_at_k[1] <= metrics.pass_at_k_ci[1].high


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided binomial (McNemar) p-value, computed directly."""
    n = wins + losses
    extreme = abs(wins - losses)
    return sum(comb(n, k) for k in range(n + 1) if abs(2 * k - n) >= extreme) / 2**n


@pytest.mark.parametrize(("wins", "losses", "ties"), [(9, 1, 5), (5, 5, 0), (3, 0, 10), (12, 4, 2), (0, 1, 0)])
def test_sign_flip_on_binary_outcomes_is_the_exact_mcnemar_test(wins: int, losses: int, ties: int):
    differences = [1.0] * wins + [-1.0] * losses + [0.0] * ties

    assert sign_flip_p_value(differences) == pytest.approx(sign_test(wins, losses))


def test_sign_flip_samples_when_too_many_tasks_differ():
    differences = [1.0] * 30 + [-1.0] * 14

    assert sign_flip_p_value(differences) == pytest.approx(sign_test(30, 14), abs=0.005)
    assert sign_flip_p_value(differences) == sign_flip_p_value(differences)


def test_no_difference_has_p_value_one():
    assert sign_flip_p_value([0.0] * 20) == 1.0
    assert sign_flip_p_value([]) == 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 5)), min_size=2, max_size=30))
def test_interval_bounds_the_estimate_for_any_counts(counts: list[tuple[int, int]]):
    passed = [float(min(p, n)) for p, n in counts]
    totals = [float(n) for _, n in counts]
    ci = ratio_interval(passed, totals)
    estimate = sum(passed) / sum(totals)

    assert ci is not None
    assert 0.0 <= ci.low <= ci.high <= 1.0
    assert ci.low - 1e-12 <= estimate <= ci.high + 1e-12
