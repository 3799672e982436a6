"""A loaded set of scenarios and tasks from any number of sources, with unique ids."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._categories import category_slug
from ._errors import ScenarioError, UnknownTaskError
from ._scenario import Scenario
from ._state import merge_patch
from ._task import Task


@dataclass
class Catalog:
    """Scenarios and tasks by id, each remembering the source it came from."""

    scenarios: dict[str, Scenario] = field(default_factory=dict)
    tasks: dict[str, Task] = field(default_factory=dict)
    origins: dict[str, str] = field(default_factory=dict)

    def add(self, scenario: Scenario, origin: str) -> list[ScenarioError]:
        """Add a scenario; returns id clashes instead of silently shadowing an earlier source."""
        errors: list[ScenarioError] = []
        if scenario.id in self.scenarios:
            first = self.origins[scenario.id]
            if _same_origin(first, origin):
                return errors  # the same file named twice (e.g. a bundled file passed as a source)
            errors.append(ScenarioError(origin, "id", f"scenario id {scenario.id!r} is already defined in {first}"))
            return errors
        seen: dict[str, int] = {}
        for index, task in enumerate(scenario.tasks):
            if task.id in self.tasks:
                first = self.origins[self.tasks[task.id].scenario or ""]
                errors.append(
                    ScenarioError(origin, ["tasks", index, "id"], f"task id {task.id!r} is already defined in {first}")
                )
            elif task.id in seen:
                errors.append(
                    ScenarioError(
                        origin, ["tasks", index, "id"], f"task id {task.id!r} is already used by tasks[{seen[task.id]}]"
                    )
                )
            seen.setdefault(task.id, index)
        if errors:
            return errors
        self.scenarios[scenario.id] = scenario
        self.origins[scenario.id] = origin
        for task in scenario.tasks:
            self.tasks[task.id] = task
        return errors

    def task(self, task_id: str) -> Task:
        try:
            return self.tasks[task_id]
        except KeyError:
            raise UnknownTaskError("task", task_id, self.tasks) from None

    def scenario(self, scenario_id: str) -> Scenario:
        try:
            return self.scenarios[scenario_id]
        except KeyError:
            raise UnknownTaskError("scenario", scenario_id, self.scenarios) from None

    def scenario_of(self, task: Task | str) -> Scenario:
        if isinstance(task, str):
            task = self.task(task)
        return self.scenario(task.scenario or "")

    def initial_state(self, task: Task | str) -> dict[str, Any]:
        """The scenario's initial state with the task's merge patch applied."""
        if isinstance(task, str):
            task = self.task(task)
        return merge_patch(self.scenario_of(task).initial_state, task.initial_state_patch)

    def select(self, selector: str | Iterable[str] | None = None) -> list[Task]:
        """Tasks matching any of the comma-separated patterns.

        A pattern is a glob on the task id (`occubench/*`), the scenario id, or the category slug
        (`healthcare-life-sciences`); `all`, `*` or nothing selects every task.
        """
        patterns = _patterns(selector)
        if not patterns or "all" in patterns:
            return list(self.tasks.values())
        chosen: list[Task] = []
        for task in self.tasks.values():
            keys = self._keys(task)
            if any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns for key in keys):
                chosen.append(task)
        return chosen

    def select_each(self, selector: str | Iterable[str] | None = None) -> list[Task]:
        """Like `select`, but every pattern must match a task: a typo among several is not dropped silently.
        Raises UnknownTaskError for the first pattern that matches nothing, naming the nearest ids."""
        patterns = _patterns(selector)
        if patterns and "all" not in patterns:
            keys = {key for task in self.tasks.values() for key in self._keys(task)}
            for pattern in patterns:
                if not any(fnmatch.fnmatchcase(key, pattern) for key in keys):
                    raise UnknownTaskError("task, scenario or category", pattern, sorted(keys))
        return self.select(patterns)

    def _keys(self, task: Task) -> tuple[str, str, str]:
        scenario = self.scenario_of(task)
        return (task.id, scenario.id, category_slug(scenario.category))


def _patterns(selector: str | Iterable[str] | None) -> list[str]:
    if selector is None:
        return []
    patterns = [p.strip() for p in (selector.split(",") if isinstance(selector, str) else selector)]
    return [p for p in patterns if p]


def _same_origin(first: str, second: str) -> bool:
    if first == second:
        return True
    if ":" in first.split("/", 1)[0] or ":" in second.split("/", 1)[0]:
        return False  # `occubench:...` origins only match when spelled the same
    return Path(first).resolve() == Path(second).resolve()
