"""Metrics on worked examples: pass@k, pass^k, robustness, completion tables, usage and simulator errors."""

from __future__ import annotations

import pytest

from occusim.analysis import ResultRow, compute_metrics, pass_at_k, pass_hat_k, robustness
from occusim.environments import Usage
from occusim.judge import CheckVerdict, ItemVerdict, Verdict, Vote


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


def full(task: str, outcomes: dict[str, list[bool]], **kwargs) -> list[ResultRow]:
    return [row(task, mode, trial, passed, **kwargs) for mode, trials in outcomes.items()
            for trial, passed in enumerate(trials)]


def test_robustness_is_the_worst_faulted_mode_over_clean():
    rows = [*full("s/a", {"E0": [True], "E1": [True], "E2": [False], "E3": [True]}),
            *full("s/b", {"E0": [True], "E1": [False], "E2": [False], "E3": [True]}),
            *full("s/c", {"E0": [False], "E1": [True], "E2": [True], "E3": [False]})]

    result = robustness(rows)

    # E0 2/3, E1 2/3, E2 1/3, E3 2/3 over the same three tasks.
    assert result.value == pytest.approx((1 / 3) / (2 / 3))
    assert result.rates == pytest.approx({"E0": 2 / 3, "E1": 2 / 3, "E2": 1 / 3, "E3": 2 / 3})
    assert (result.tasks, result.partial, result.missing) == (3, False, [])
    assert "E2" in result.note and "partial" not in result.note


def test_robustness_over_unpaired_tasks_no_longer_exceeds_one():
    """One E1 infrastructure error used to leave E1 with only the task that passed: E1/E0 = 1.0/0.5 = 2.0."""
    rows = [row("s/a", "E0", 0, True), row("s/b", "E0", 0, False),
            row("s/a", "E1", 0, True), row("s/b", "E1", 0, None, status="infra_error")]
    by_mode = compute_metrics(rows).by_fault_mode
    assert by_mode["E1"].rate / by_mode["E0"].rate == 2.0  # the unpaired ratio the report used to print

    result = robustness(rows)

    assert result.value == pytest.approx(1.0)  # s/a alone: E1 1.0 / E0 1.0
    assert result.tasks == 1
    assert "1 task(s) left out" in result.note


def test_robustness_is_labelled_partial_when_a_level_is_missing():
    rows = [*full("s/a", {"E0": [True, True], "E2": [True, False]}),
            *full("s/b", {"E0": [True, False], "E2": [False, False]})]

    result = robustness(rows)

    assert result.value == pytest.approx(0.25 / 0.75)
    assert result.partial and result.missing == ["E1", "E3"]
    assert "partial: no scored E1, E3" in result.note


def test_prompt_rows_count_as_e3():
    rows = [*full("s/a", {"E0": [True], "E1": [True], "E2": [True], "prompt": [False]}),
            *full("s/b", {"E0": [True], "E1": [True], "E2": [False], "prompt": [True]})]

    result = robustness(rows)

    assert not result.partial and result.missing == []
    assert result.value == pytest.approx(0.5)
    assert "prompt counted as E3" in result.note


@pytest.mark.parametrize(
    ("outcomes", "reason"),
    [
        ({"s/a": {"E1": [True], "E2": [False]}}, "no scored E0"),
        ({"s/a": {"E0": [False], "E1": [False]}}, "E0 completion rate over 1 task(s) is 0"),
        ({"s/a": {"E0": [True]}}, "no scored E1, E2, E3 or prompt"),
        ({"s/a": {"E0": [True]}, "s/b": {"E1": [True]}}, "no task was scored in every mode"),
    ],
)
def test_robustness_says_why_it_is_undefined(outcomes: dict, reason: str):
    result = robustness([r for task, modes in outcomes.items() for r in full(task, modes)])

    assert result.value is None
    assert reason in result.note


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
    # Paired per task: a E0 1.0, E1 0.5; b E0 0.5, E1 0.0 (its one scored E1 trial failed).
    assert metrics.robustness.value == pytest.approx(0.25 / 0.75)
    assert metrics.robustness.partial and metrics.robustness.tasks == 2
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


def verdict(task: str, votes: list[list[bool | None]], *, passed: bool = True) -> Verdict:
    """A verdict with one llm check per entry of `votes` (None: an abstained vote)."""
    checks = []
    for index, cast in enumerate(votes):
        ayes, noes = cast.count(True), cast.count(False)
        checks.append(CheckVerdict(index=index, id=f"answer#{index}", description="d", passed=ayes > noes,
                                   votes=[Vote(vote=i, passed=value) for i, value in enumerate(cast)],
                                   tie=ayes == noes, abstentions=cast.count(None)))
    return Verdict(task_id=task, score=1.0 if passed else 0.0, passed=passed, pass_threshold=1.0, prompt_version="t",
                   items=[ItemVerdict(id="answer", kind="llm", weight=1.0, passed=passed, deterministic=False,
                                      checks=checks)],
                   abstentions=sum(check.abstentions for check in checks),
                   ties=[check.id for check in checks if check.tie])


def test_judge_abstentions_and_ties_are_counted_from_the_verdicts():
    rows = [
        row("s/a", "E0", 0, True).model_copy(update={"verdict": verdict("s/a", [[True, True, None], [True] * 3])}),
        row("s/b", "E0", 0, False).model_copy(update={"verdict": verdict("s/b", [[True, False, None]],
                                                                          passed=False)}),
        row("s/c", "E0", 0, True).model_copy(update={"verdict": verdict("s/c", [[True] * 3])}),
    ]

    judge = compute_metrics(rows).judge

    assert judge.votes == 12
    assert (judge.abstentions.count, judge.abstentions.total) == (2, 12)
    assert (judge.ties.count, judge.ties.total) == (1, 4)
    assert judge.episodes_with_abstentions == 2
    assert judge.abstentions.ci is not None and judge.abstentions.ci.low <= 2 / 12 <= judge.abstentions.ci.high


def test_unjudged_episodes_are_reported_apart():
    never_decided = verdict("s/b", [[None, None, None]], passed=False)
    unjudged = row("s/b", "E0", 0, None).model_copy(
        update={"status": "unjudged", "verdict": never_decided, "error": "no usable judge vote on answer#0"})
    rows = [row("s/a", "E0", 0, True), unjudged, row("s/c", "E0", 0, None, status="infra_error")]

    metrics = compute_metrics(rows)

    assert (metrics.episodes, metrics.scored, metrics.unjudged, metrics.infra_errors) == (3, 1, 1, 1)
    assert (metrics.completion.passed, metrics.completion.total) == (1, 1)  # neither a pass nor a fail
    assert metrics.unjudged_messages == ["s/b E0 trial 0: no usable judge vote on answer#0"]
    assert metrics.infra_error_messages == ["s/c E0 trial 0: ProviderError: down"]
    assert (metrics.judge.abstentions.count, metrics.judge.abstentions.total) == (3, 3)


def test_faults_met_per_episode():
    labelled = [row("s/a", "E2", 0, True).model_copy(update={"faults_injected": ["stale", "stale", "truncate"]}),
                row("s/b", "E2", 0, True).model_copy(update={"faults_injected": ["stale"]})]
    counted = [row(f"s/{name}", "E3", 0, True).model_copy(update={"faults_planned": 2, "faults_met": met})
               for name, met in (("a", 2), ("b", 1), ("c", 0), ("d", 2))]

    met = compute_metrics([*labelled, *counted, row("s/a", "E0", 0, True)]).faults_met

    assert met["E0"].mean == 0 and met["E0"].counted == "faulted calls"
    assert met["E2"].mean == 2.0 and met["E2"].counted == "faulted calls" and met["E2"].short is None
    assert met["E3"].mean == pytest.approx(5 / 4) and met["E3"].counted == "faults"
    assert met["E3"].short is not None and (met["E3"].short.count, met["E3"].short.total) == (2, 4)
    assert met["E3"].met_all == 2 and met["E2"].met_all is None


def test_robustness_uses_the_episodes_that_met_their_faults_and_counts_the_others():
    clean = [row(f"s/t{i}", "E0", 0, True) for i in range(4)]
    met = [row(f"s/t{i}", "E2", 0, i < 2).model_copy(update={"faults_planned": 2, "faults_met": 2}) for i in range(4)]
    # Two more E2 trials that passed without meeting any fault: one too short, one whose faults found
    # nothing to degrade. They ran clean; counted, they would raise E2 completion over t2 and t3 from 0 to 0.5.
    short = row("s/t2", "E2", 1, True).model_copy(update={"faults_planned": 2, "faults_met": 0,
                                                          "too_short_for_faults": True})
    inapplicable = row("s/t3", "E2", 1, True).model_copy(update={"faults_planned": 2, "faults_met": 0,
                                                                 "faults_not_applicable": True})
    # One that met the first fault and stopped there (failed) was under E2: it is kept.
    stopped = row("s/t1", "E2", 1, False).model_copy(update={"faults_planned": 2, "faults_met": 1,
                                                            "too_short_for_faults": True})
    metrics = compute_metrics([*clean, *met, short, inapplicable, stopped])

    # E2 per task: t0 1, t1 (1 + 0) / 2, t2 0, t3 0 -> 0.375 over E0's 1.
    assert metrics.robustness.value == pytest.approx(0.375) and metrics.robustness.unfaulted_left_out == 2
    assert "2 faulted-mode episode(s) left out, having met none of their faults" in metrics.robustness.note
    e2 = metrics.faults_met["E2"]
    assert (e2.episodes, e2.met_all, e2.too_short, e2.not_applicable) == (7, 4, 2, 1)
    # Completion by mode still counts every scored episode: only robustness is restricted.
    assert (metrics.by_fault_mode["E2"].passed, metrics.by_fault_mode["E2"].total) == (4, 7)
    # The report says how many episodes of each mode met their faults, and what robustness left out.
    from occusim.analysis import RunConfig, build_report, render_markdown

    config = RunConfig(agent_model="a", world_model="w", judge_model="j", faults=["E0", "E2"])
    text = render_markdown(build_report(config, [*clean, *met, short, inapplicable, stopped], with_figures=False))
    assert "| E2 | 7 | 4 |" in text and "| 2 | 1 |" in text and "Faults not applicable" in text
    assert "Left out: 2 faulted-mode episode(s) that met none of their faults." in text
    # Rows that record no fault counts (older runs, OccuBench's protocol) are all used.
    old = compute_metrics([*clean, *[r.model_copy(update={"faults_planned": None, "faults_met": None}) for r in met]])
    assert old.robustness.unfaulted_left_out == 0 and old.robustness.value == pytest.approx(0.5)


def _without_intervals(value):
    """`value` (a dumped model) with every `ci` set to None."""
    if isinstance(value, dict):
        return {key: None if key == "ci" else _without_intervals(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [_without_intervals(inner) for inner in value]
    return value


def _intervals(value) -> list:
    if isinstance(value, dict):
        return [inner for key, inner in value.items() if key == "ci" and inner is not None] + [
            found for inner in value.values() for found in _intervals(inner)]
    if isinstance(value, list):
        return [found for inner in value for found in _intervals(inner)]
    return []


def test_metrics_without_intervals_are_the_same_figures_with_no_interval():
    tasks = [f"s{index % 3}/t{index}" for index in range(6)]
    rows = [row(task, mode, trial, (index + trial) % 3 != 0, simulator_errors=trial, category=f"c{index % 2}")
            for index, task in enumerate(tasks) for mode in ("E0", "E1", "E3") for trial in range(2)]
    rows[0] = rows[0].model_copy(update={"verdict": verdict(rows[0].task_id, [[True, None, True]])})
    rows[-1] = rows[-1].model_copy(update={"faults_planned": 2, "faults_met": 1})

    full_metrics = compute_metrics(rows).model_dump()
    light = compute_metrics(rows, intervals=False).model_dump()

    assert _intervals(full_metrics) and not _intervals(light)
    assert all(value is None for value in light["pass_at_k_ci"].values()) and light["simulator_error_ci"] is None
    stripped = _without_intervals(full_metrics) | {"simulator_error_ci": None}
    stripped["pass_at_k_ci"] = dict.fromkeys(full_metrics["pass_at_k_ci"])
    stripped["pass_hat_k_ci"] = dict.fromkeys(full_metrics["pass_hat_k_ci"])
    assert light == stripped
