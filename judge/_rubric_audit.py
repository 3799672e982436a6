"""Rubric checks that need the judge's evaluation: guards hold at the start, nothing else earns credit there.

`occusim validate` runs them after the file checks: a guard false in the task's initial state can never
hold, and a scoring state item already true there gives credit for doing nothing.
"""

from __future__ import annotations

from occusim.environments import Catalog, ScenarioError, StateItem, Task

from ._scoring import check_item


def audit_task_rubric(task: Task, initial: dict, source: str, index: int) -> list[ScenarioError]:
    """The problems of one task's state items evaluated on its initial state."""
    errors: list[ScenarioError] = []
    for number, item in enumerate(task.rubric.items):
        if not isinstance(item, StateItem):
            continue
        verdict = check_item(item, state=initial, steps=[])
        where: list[str | int] = ["tasks", index, "rubric", "items", number]
        if item.guard and verdict.passed is not True:
            failing = "; ".join(check.reason for check in verdict.checks if check.passed is not True)
            errors.append(ScenarioError(source, where, f"guard {item.id!r} does not hold in the task's initial "
                                        f"state ({failing}); a guard must be true at the start"))
        elif not item.guard and verdict.passed is True:
            errors.append(ScenarioError(source, where, f"item {item.id!r} is already true in the task's initial "
                                        "state, so an agent that does nothing earns it; make it `guard: true` "
                                        "(it must stay true) or check what the work changes"))
    return errors


def audit_catalog_rubrics(catalog: Catalog) -> list[ScenarioError]:
    """`audit_task_rubric` over every task of the catalog, named by the file it came from."""
    errors: list[ScenarioError] = []
    for scenario_id, scenario in catalog.scenarios.items():
        source = catalog.origins.get(scenario_id, scenario_id)
        for index, task in enumerate(scenario.tasks):
            errors.extend(audit_task_rubric(task, catalog.initial_state(task), source, index))
    return errors
