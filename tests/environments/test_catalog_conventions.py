"""The bundled catalog keeps the conventions a reader relies on: declared tool effects hold in the golden
solutions, and every task carries judge exemplars that teach a boundary (a passing and a failing verdict on
one of its `llm` items)."""

from __future__ import annotations

from collections import defaultdict

import pytest

from occusim.environments import LlmItem, Scenario, Task, load_catalog

CATALOG = load_catalog()
TASKS = sorted(CATALOG.tasks.values(), key=lambda t: t.id)


def _scenario(task: Task) -> Scenario:
    return CATALOG.scenarios[task.scenario or ""]


def _within(path: str, roots: list[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_golden_patches_respect_the_declared_tool_effects(task: Task):
    scenario = _scenario(task)
    problems = []
    for number, step in enumerate(task.reference_solution):
        tool = scenario.tool(step.tool)
        assert tool is not None, f"{task.id} step {number} names an unknown tool {step.tool!r}"
        if tool.read_only and step.state_patch:
            problems.append(f"step {number}: read-only {tool.name} changes the state")
        if tool.writes is not None:
            paths = [op[key] for op in step.state_patch for key in ("path", "from") if key in op]
            problems += [f"step {number}: {tool.name} writes {path} outside {tool.writes}"
                         for path in paths if not _within(path, tool.writes)]
    assert not problems, f"{task.id}: {problems}"


def test_every_catalog_task_carries_exemplars():
    assert TASKS
    assert [task.id for task in TASKS if not task.rubric.exemplars] == []


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
def test_exemplars_pass_and_fail_one_llm_item(task: Task):
    llm_items = {item.id for item in task.rubric.items if isinstance(item, LlmItem)}
    verdicts: dict[str | None, set[bool]] = defaultdict(set)
    for exemplar in task.rubric.exemplars:
        assert exemplar.item_id in llm_items, f"{task.id}: exemplar for {exemplar.item_id!r}, not an llm item"
        assert exemplar.excerpt.strip() and exemplar.explanation.strip(), f"{task.id}: exemplar without text"
        verdicts[exemplar.item_id].add(exemplar.passed)
    assert verdicts and all(seen == {True, False} for seen in verdicts.values()), f"{task.id}: {dict(verdicts)}"
