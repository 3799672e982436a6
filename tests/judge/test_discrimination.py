"""The discrimination gates: bad rubrics derived from bundled tasks are reported, and the catalog passes."""

from __future__ import annotations

import json

from occusim.clients.cli import main
from occusim.environments import LlmItem, Rubric, StateItem, Task, ToolCallItem, load_catalog
from occusim.judge import derive_baselines, discriminate_task

CATALOG = load_catalog([])
ORDER = "water-rights-watermaster/volume-limited-order"
TWO_WORK_ORDERS = "pressure-vessel-inspector/below-minimum-rerate"


def gate(task: Task) -> dict[str, list[str]]:
    """Each failed gate of `task` and the baselines that failed it."""
    result = discriminate_task(CATALOG.scenario_of(task), task, CATALOG.initial_state(task))
    failures: dict[str, list[str]] = {}
    for failure in result.failures:
        failures.setdefault(failure.gate, []).append(failure.baseline or "")
    return failures


def with_items(task: Task, *items: LlmItem | StateItem | ToolCallItem, threshold: float | None = None) -> Task:
    rubric = Rubric(items=list(items), pass_threshold=threshold or task.rubric.pass_threshold,
                    exemplars=[e for e in task.rubric.exemplars if e.item_id in {i.id for i in items}])
    return task.model_copy(update={"rubric": rubric})


def item(task: Task, item_id: str, **changes: object):
    found = next(i for i in task.rubric.items if i.id == item_id)
    return found.model_copy(update=changes)


def test_the_bundled_tasks_pass_their_gates_as_shipped() -> None:
    for task_id in (ORDER, TWO_WORK_ORDERS):
        assert gate(CATALOG.task(task_id)) == {}


def test_credit_for_doing_nothing_is_reported() -> None:
    task = CATALOG.task(ORDER)
    idle = StateItem(id="decree-kept", description="The decree is unchanged", weight=2,
                     checks=[{"pointer": "/rights/WR-1921/decreed_cfs", "op": "eq", "value": 10.0}])
    failures = gate(with_items(task, *task.rubric.items, idle))
    assert failures["zero-without-work"] == ["do-nothing", "read-only"]
    # The same item as a guard earns nothing, so the gate holds.
    assert gate(with_items(task, *task.rubric.items, idle.model_copy(update={"guard": True}))) == {}


def test_a_rubric_without_a_critical_item_is_reported() -> None:
    task = CATALOG.task(ORDER)
    plain = [i.model_copy(update={"critical": False}) for i in task.rubric.items]
    assert "has-critical-item" in gate(with_items(task, *plain))


def test_a_write_no_item_guards_is_reported_unless_declared_optional() -> None:
    task = CATALOG.task(ORDER)
    read = ToolCallItem(id="decree-read", description="", checks=[{"tool": "get_water_right"}])
    unguarded = with_items(task, read, item(task, "arithmetic", critical=True), threshold=0.5)
    unguarded = unguarded.model_copy(update={"verification_plan": None})
    failures = gate(unguarded)
    assert failures["write-guarded"] == ["minus-step-1"]
    steps = [s.model_copy(update={"optional": "courtesy copy"}) if s.state_patch else s
             for s in unguarded.reference_solution]
    assert "write-guarded" not in gate(unguarded.model_copy(update={"reference_solution": steps}))


def test_a_guarded_value_whose_item_does_not_decide_is_reported() -> None:
    task = CATALOG.task(ORDER)
    loose = with_items(task, item(task, "rate-within-volume", critical=False, weight=1),
                       item(task, "decree-read", weight=9), item(task, "arithmetic", critical=True), threshold=0.5)
    loose = loose.model_copy(update={"verification_plan": None})
    # The answer is critical, so every baseline already fails on its answer: only the perturbed value is read.
    loose = with_items(loose, *[i.model_copy(update={"critical": False}) if i.kind == "llm" else i
                                for i in loose.rubric.items], threshold=0.5)
    loose = loose.model_copy(update={"rubric": loose.rubric.model_copy(update={"items": [
        *loose.rubric.items[:2], item(task, "decree-read", id="decree-read-2", critical=True, weight=1)]})})
    failures = gate(loose)
    assert "perturbed-step-1-ordered_cfs" in failures["value-guarded"]


def test_a_check_on_a_list_position_fails_the_reordered_reference() -> None:
    task = CATALOG.task(TWO_WORK_ORDERS)
    baselines = {b.name: b for b in derive_baselines(CATALOG.scenario_of(task), task, CATALOG.initial_state(task))}
    reordered = baselines["reordered"].state["work_orders"]
    reference = baselines["reference"].state["work_orders"]
    assert reordered == list(reversed(reference)) and len(reference) == 2
    positional = StateItem(id="first-order", description="", checks=[
        {"pointer": "/work_orders/0/task", "op": "eq", "value": reference[0]["task"]}])
    assert gate(with_items(task, *task.rubric.items, positional))["order-robust"] == ["reordered"]
    insensitive = StateItem(id="first-order", description="", checks=[
        {"pointer": "/work_orders", "op": "any", "match": {"task": reference[0]["task"]}}])
    assert gate(with_items(task, *task.rubric.items, insensitive)) == {}


def test_a_near_miss_answer_that_still_passes_is_reported() -> None:
    task = CATALOG.task(ORDER)
    lenient = with_items(task, *[i.model_copy(update={"critical": i.kind == "state"}) for i in task.rubric.items],
                         threshold=0.5)
    assert gate(lenient.model_copy(update={"verification_plan": None}))["no-baseline-passes"] == ["near-miss-answer-1"]


def test_a_task_without_a_reference_is_reported_as_not_gateable() -> None:
    task = CATALOG.task(ORDER).model_copy(update={"reference_solution": []})
    result = discriminate_task(CATALOG.scenario_of(task), task, CATALOG.initial_state(task))
    assert result.gateable is False and "no reference solution" in (result.reason or "")


def test_the_bundled_catalog_passes_every_gate(tmp_path, capsys) -> None:
    out = tmp_path / "gates.json"
    code = main(["validate", "--discrimination", "--format", "json", "--out", str(out)])
    printed = capsys.readouterr()
    report = json.loads(out.read_text(encoding="utf-8"))
    assert json.loads(printed.out) == report
    assert len(report["tasks"]) == len(CATALOG.tasks) and all(task["gateable"] for task in report["tasks"])
    failing = {task["task_id"]: task["failures"] for task in report["tasks"] if task["failures"]}
    assert failing == {}
    idle = [b["score"] for task in report["tasks"] for b in task["baselines"] if b["kind"] in ("do-nothing", "read-only")]
    assert max(idle) == 0
    assert all(any(b["kind"] == "minus-step" for b in task["baselines"]) for task in report["tasks"])
    assert code == 0
    assert printed.err.splitlines() == [
        f"ok: {len(CATALOG.scenarios)} scenarios, {len(CATALOG.tasks)} tasks, 0 errors",
        f"ok: {len(CATALOG.tasks)} tasks gated, 0 failing a gate, 0 not gateable; do-nothing scores up to 0",
    ]


def test_the_markdown_report_has_a_table_per_task(tmp_path, capsys) -> None:
    out = tmp_path / "gates.md"
    main(["validate", "--discrimination", "--out", str(out)])
    printed = capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    assert text in printed
    assert text.count("\n## ") == len(CATALOG.tasks)
    assert f"## {ORDER}\n\n| baseline | score | passed | failed items |" in text
    assert "| do-nothing | 0.00 | fail |" in text
    assert "do-nothing scores up to 0" in text.splitlines()[-1]
