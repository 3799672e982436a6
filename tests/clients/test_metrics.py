"""Metrics on worked examples: pass@k, pass^k, robustness, completion tables, usage and simulator errors."""

from __future__ import annotations

import pytest

from occusim.clients import ResultRow, compute_metrics, pass_at_k, pass_hat_k, robustness
from occusim.environments import Usage


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 1 - 3 / 10),  # 1 - C(3,2)/C(5,2)
        (5, 2, 4, 1.0),  # only 3 failures: any 4 trials include a pass
        (5, 0, 3, 0.0),
        (2, 1, 2, 1.0),
        (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    ],
)
def test_pass_at_k(n: int, c: int, k: int, expected: float):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [
        (5, 2, 1, 0.4),
        (5, 2, 2, 1 / 10),  # C(2,2)/C(5,2)
        (5, 2, 3, 0.0),
        (4, 4, 3, 1.0),
        (10, 7, 3, 35 / 120),  # C(7,3)/C(10,3)
    ],
)
def test_pass_hat_k(n: int, c: int, k: int, expected: float):
    assert pass_hat_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)])
def test_estimators_reject_impossible_counts(n: int, c: int, k: int):
    with pytest.raises(ValueError):
        pass_at_k(n, c, k)
    with pytest.raises(ValueError):
        pass_hat_k(n, c, k)


def test_robustness_is_the_worst_faulted_mode_over_clean():
    result = robustness({"E0": 0.8, "E1": 0.6, "E2": 0.4, "E3": 0.7})

    assert result.value == pytest.approx(0.5)
    assert "E2" in result.note


def test_robustness_uses_only_the_modes_present():
    assert robustness({"E0": 0.75, "E2": 0.25}).value == pytest.approx(1 / 3)
    assert robustness({"E0": 0.5, "E3": 0.5, "prompt": 0.0}).value == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("rates", "reason"),
    [
        ({"E1": 0.5, "E2": 0.2}, "no scored E0"),
        ({"E0": 0.0, "E1": 0.0}, "E0 completion rate is 0"),
        ({"E0": 0.9}, "no scored E1, E2 or E3"),
        ({"E0": 0.9, "E1": None}, "no scored E1, E2 or E3"),
    ],
)
def test_robustness_says_why_it_is_undefined(rates: dict, reason: str):
    result = robustness(rates)

    assert result.value is None
    assert reason in result.note


def row(task: str, mode: str, trial: int, passed: bool | None, *, category: str = "Healthcare & Life Sciences",
        difficulty: int = 1, status: str = "ok", steps: int = 4, simulator_errors: int = 0,
        usage: dict[str, Usage] | None = None) -> ResultRow:
    return ResultRow(
        task_id=task, scenario_id=task.split("/")[0], category=category, difficulty=difficulty, fault_mode=mode,
        fault_count=2, fault_duration=2, trial=trial, seed=trial, agent_model="a", world_model="w", judge_model="j",
        transport="inprocess", status=status, passed=passed if status == "ok" else None,
        score=(1.0 if passed else 0.0) if status == "ok" else None, steps=steps, simulator_errors=simulator_errors,
        usage=usage or {}, error=None if status == "ok" else "ProviderError: down",
    )


def test_compute_metrics_on_a_worked_example():
    rows = [
        row("s1/a", "E0", 0, True), row("s1/a", "E0", 1, True),
        row("s1/a", "E1", 0, False), row("s1/a", "E1", 1, True),
        row("s2/b", "E0", 0, True, category="Commerce & Consumer", difficulty=3),
        row("s2/b", "E0", 1, False, category="Commerce & Consumer", difficulty=3, simulator_errors=2),
        row("s2/b", "E1", 0, False, category="Commerce & Consumer", difficulty=3),
        row("s2/b", "E1", 1, None, category="Commerce & Consumer", difficulty=3, status="infra_error", steps=0),
    ]

    metrics = compute_metrics(rows)

    assert (metrics.episodes, metrics.scored, metrics.infra_errors) == (8, 7, 1)
    assert (metrics.completion.passed, metrics.completion.total) == (4, 7)
    assert metrics.by_fault_mode["E0"].rate == pytest.approx(3 / 4)
    assert metrics.by_fault_mode["E1"].rate == pytest.approx(1 / 3)  # the infra error is not in the denominator
    assert metrics.robustness.value == pytest.approx((1 / 3) / (3 / 4))
    assert {name: (r.passed, r.total) for name, r in metrics.by_category.items()} == {
        "Commerce & Consumer": (1, 3), "Healthcare & Life Sciences": (3, 4),
    }
    assert list(metrics.by_difficulty) == [1, 3]
    # Units: a/E0 2 of 2, a/E1 1 of 2, b/E0 1 of 2, b/E1 0 of 1 (its second trial was an infra error).
    assert metrics.pass_at_k[1] == pytest.approx((1 + 0.5 + 0.5 + 0) / 4)
    assert metrics.pass_at_k[2] == pytest.approx((1 + 1 + 1) / 3)
    assert metrics.pass_hat_k[2] == pytest.approx((1 + 0 + 0) / 3)
    assert metrics.simulator_error_steps == 2 and metrics.steps == 28
    assert metrics.simulator_error_rate == pytest.approx(2 / 28)
    assert metrics.infra_error_messages == ["s2/b E1 trial 1: ProviderError: down"]


def test_usage_is_summed_by_role_including_infra_errors():
    rows = [
        row("s/a", "E0", 0, True, usage={"agent": Usage(prompt_tokens=100, completion_tokens=10, calls=2,
                                                        cost_usd=0.01),
                                         "world_model": Usage(prompt_tokens=500, calls=3, cost_usd=None)}),
        row("s/a", "E0", 1, None, status="infra_error",
            usage={"agent": Usage(prompt_tokens=50, calls=1, cost_usd=0.02), "judge": Usage(calls=3)}),
    ]

    usage = compute_metrics(rows).usage_by_role

    assert usage["agent"].prompt_tokens == 150 and usage["agent"].calls == 3
    assert usage["agent"].cost_usd == pytest.approx(0.03)
    assert usage["world_model"].cost_usd is None  # unknown stays unknown
    assert usage["judge"].calls == 3


def test_empty_groups_have_no_rate():
    metrics = compute_metrics([row("s/a", "E0", 0, None, status="infra_error")])

    assert metrics.completion.rate is None
    assert metrics.by_fault_mode == {}
    assert metrics.robustness.value is None
    assert metrics.pass_at_k == {} and metrics.simulator_error_rate is None
