"""The bundled reference steps as the audit's self-test reads them: each call with the golden state before it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any, NamedTuple

from occusim.environments import (
    Catalog,
    Collection,
    CollectionRecord,
    Scenario,
    Tool,
    apply_json_patch,
    collection_records,
    infer_collections,
    reports_error,
)

from ._audit import audit_step


class Broken(NamedTuple):
    """A changed step: its observation, patch, arguments and tool, and the state before it where an earlier
    answer is taken to have left that otherwise (None: the golden state)."""

    observation: Any
    patch: list[dict[str, Any]]
    arguments: dict[str, Any]
    tool: Tool
    before: dict[str, Any] | None = None


@dataclass
class GoldenStep:
    """One reference call with the golden state before it and everything needed to audit it."""

    task_id: str
    scenario: Scenario
    tool: Tool
    arguments: dict[str, Any]
    before: dict[str, Any]
    observation: Any
    patch: list[dict[str, Any]]
    earlier: list[Any]

    @cached_property
    def after(self) -> dict[str, Any]:
        return apply_json_patch(self.before, self.patch)

    @cached_property
    def collections(self) -> list[Collection]:
        """The scenario's declared collections (else those its initial state shows): the targets of the
        self-test's mutations come from these and the state, not from the audit's own lookups."""
        return self.scenario.collections or infer_collections(self.scenario.initial_state)

    @cached_property
    def records_before(self) -> list[CollectionRecord]:
        return [r for c in self.collections for r in collection_records(c, self.before)]

    @cached_property
    def records_after(self) -> list[CollectionRecord]:
        return [r for c in self.collections for r in collection_records(c, self.after)]

    @property
    def failed(self) -> bool:
        return not isinstance(self.observation, dict) or reports_error(self.observation)

    def audit(self, broken: Broken | None = None) -> int:
        observation, patch, arguments, tool, changed = broken if broken is not None else \
            (self.observation, self.patch, self.arguments, self.tool, None)
        before = self.before if changed is None else changed
        try:
            after = self.after if patch is self.patch and changed is None else apply_json_patch(before, patch)
        except Exception:  # a mutated patch that no longer applies is as broken as can be
            return 1
        return len(audit_step(self.scenario, tool, arguments, state_before=before, observation=observation,
                              patch=patch, state_after=after, earlier_observations=self.earlier))


def golden_steps(catalog: Catalog) -> Iterator[GoldenStep]:
    """Every reference step of the catalog's tasks, from the golden state before it."""
    for task in sorted(catalog.tasks.values(), key=lambda t: t.id):
        scenario = catalog.scenario_of(task)
        state = catalog.initial_state(task)
        earlier: list[Any] = []
        for step in task.reference_solution:
            tool = scenario.tool(step.tool)
            if tool is not None:
                yield GoldenStep(task.id, scenario, tool, step.arguments, state, step.observation,
                                 step.state_patch, list(earlier))
            earlier.append(step.observation)
            state = apply_json_patch(state, step.state_patch)


