"""Critical and guard items: either one failing fails the task whatever the score; guards earn nothing."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from occusim.environments import EpisodeRecord, Rubric, StateItem, Task, load_catalog
from occusim.judge import ItemVerdict, audit_catalog_rubrics, judge, score_items


def verdict(item_id: str, weight: float, passed: bool | None, *, critical: bool = False,
            guard: bool = False) -> ItemVerdict:
    return ItemVerdict(id=item_id, kind="state", weight=weight, passed=passed, deterministic=True,
                       critical=critical, guard=guard)


def test_a_failed_critical_item_fails_a_task_above_its_threshold() -> None:
    items = [verdict("a", 9, True), verdict("b", 1, False, critical=True)]
    assert score_items(items, 0.8) == (pytest.approx(0.9), False)
    assert score_items([verdict("a", 9, True), verdict("b", 1, True, critical=True)], 0.8) == (1.0, True)


def test_a_guard_earns_nothing_and_only_fails() -> None:
    assert score_items([verdict("a", 1, True), verdict("g", 5, True, guard=True)]) == (1.0, True)
    assert score_items([verdict("a", 1, False), verdict("g", 5, True, guard=True)]) == (0.0, False)
    assert score_items([verdict("a", 1, True), verdict("g", 5, False, guard=True)]) == (1.0, False)


def test_an_unjudged_critical_item_leaves_a_reached_threshold_undecided() -> None:
    items = [verdict("a", 9, True), verdict("b", 1, None, critical=True)]
    assert score_items(items, 0.5)[1] is None
    assert score_items([verdict("a", 1, False), verdict("b", 9, None, critical=True)], 0.5)[1] is None
    assert score_items([verdict("a", 9, False), verdict("b", 1, None, critical=True)], 0.5)[1] is False


def test_guards_are_state_items_and_never_critical_and_not_all_of_a_rubric() -> None:
    check = {"pointer": "/hold", "op": "eq", "value": True}
    with pytest.raises(ValidationError, match="drop `critical`"):
        StateItem(id="g", description="", checks=[check], guard=True, critical=True)
    with pytest.raises(ValidationError, match="nothing earns score"):
        Rubric(items=[StateItem(id="g", description="", checks=[check], guard=True)])
    with pytest.raises(ValidationError):
        Rubric.model_validate({"items": [{"id": "t", "kind": "tool_call", "description": "", "guard": True,
                                          "checks": [{"tool": "x"}]}]})


async def test_the_judge_names_the_failed_guard_of_a_recorded_episode() -> None:
    catalog = load_catalog([])
    task = next(iter(catalog.tasks.values()))
    hold = StateItem(id="hold-kept", description="The hold stays", guard=True,
                     checks=[{"pointer": "/hold", "op": "eq", "value": True}])
    work = StateItem(id="work", description="Done", checks=[{"pointer": "/done", "op": "eq", "value": True}])
    guarded = task.model_copy(update={"rubric": Rubric(items=[work, hold]), "verification_plan": None})
    record = EpisodeRecord(id="e", task_id=task.id, scenario_id="s", initial_state={"hold": True},
                           state={"hold": False, "done": True})
    result = await judge(guarded, record, llm_items="skip")
    assert result.score == 1.0 and result.passed is False
    assert result.blocking_failures == ["hold-kept"]


def _task_with(items: list[StateItem]) -> Task:
    return Task(id="probe/t", scenario="probe", title="t", instruction="i", difficulty=1,
                rubric=Rubric(items=items))


def test_validate_refuses_credit_at_the_start_and_a_guard_that_does_not_hold(tmp_path) -> None:
    from occusim.environments import Catalog, Scenario

    catalog = load_catalog([])
    scenario = next(iter(catalog.scenarios.values()))
    first_key = next(iter(scenario.initial_state))
    true_at_start = StateItem(id="idle-credit", description="", checks=[{"pointer": f"/{first_key}", "op": "exists"}])
    false_guard = StateItem(id="bad-guard", description="", guard=True,
                            checks=[{"pointer": f"/{first_key}", "op": "absent"}])
    good_guard = StateItem(id="good-guard", description="", guard=True,
                           checks=[{"pointer": f"/{first_key}", "op": "exists"}])
    work = StateItem(id="work", description="", checks=[{"pointer": "/nothing-yet", "op": "exists"}])
    task = _task_with([true_at_start, false_guard, good_guard, work]).model_copy(update={"scenario": scenario.id})
    probe = Scenario.model_validate({**scenario.model_dump(), "tasks": [task.model_dump()]})
    single = Catalog()
    single.add(probe, "probe.yaml")
    messages = [str(error) for error in audit_catalog_rubrics(single)]
    assert len(messages) == 2
    assert "probe.yaml: tasks[0].rubric.items[0]: item 'idle-credit' is already true" in messages[0]
    assert "guard 'bad-guard' does not hold in the task's initial state" in messages[1]
