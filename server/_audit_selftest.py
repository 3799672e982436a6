"""The audit's own accuracy: the bundled reference steps, each also broken by seeded mutations of the kinds a
simulator gets wrong, audited; recall on the broken steps and false alarms on the golden ones."""

from __future__ import annotations

import copy
import random
import string
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import jsonpointer
from pydantic import BaseModel, Field, computed_field

from occusim.environments import Catalog, Scenario, Tool, apply_json_patch, load_catalog, reports_error

from ._audit import audit_step
from ._audit_index import (
    ID_PATTERN,
    StateIndex,
    is_id_key,
    is_name_key,
    is_scalar,
    own_id,
    pointer,
    walk_lists,
    walk_objects,
    walk_strings,
)

MUTATIONS = ("fabricate_entity", "drop_list_item", "invent_field", "change_state_value", "write_read_only",
             "contradict_patch")


class MutationTally(BaseModel):
    steps: int = 0
    caught: int = 0


class AuditSelftest(BaseModel):
    """How well the per-step audit tells broken simulated steps from golden ones."""

    seed: int
    steps: int = Field(description="Labelled steps: the golden ones and their mutations.")
    golden: int
    false_alarms: int = Field(description="Golden steps the audit flagged.")
    mutated: int
    caught: int = Field(description="Mutated steps the audit flagged.")
    by_mutation: dict[str, MutationTally]
    missed: list[str] = Field(default_factory=list, description="A few mutated steps the audit let through.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def recall(self) -> float:
        """Share of the mutated steps the audit flagged."""
        return self.caught / self.mutated if self.mutated else 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def false_alarm_rate(self) -> float:
        """Share of the golden steps the audit flagged."""
        return self.false_alarms / self.golden if self.golden else 0.0

    def summary(self) -> str:
        """`recall: 96.4 %` and `false alarms: 0.9 %` lines, with the counts behind them."""
        return (f"recall: {100 * self.recall:.1f} % ({self.caught} of {self.mutated} mutated steps)\n"
                f"false alarms: {100 * self.false_alarm_rate:.1f} % ({self.false_alarms} of {self.golden} golden "
                "steps)")


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
    def index(self) -> StateIndex:
        return StateIndex.of(self.after)

    def audit(self, observation: Any, patch: list[dict[str, Any]]) -> int:
        after = self.after if patch is self.patch else apply_json_patch(self.before, patch)
        return len(audit_step(self.scenario, self.tool, self.arguments, state_before=self.before,
                              observation=observation, patch=patch, state_after=after,
                              earlier_observations=self.earlier))


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


def run_audit_selftest(seed: int = 0, catalog: Catalog | None = None) -> AuditSelftest:
    """Audit every golden step of the bundled catalog and one seeded mutation of it per applicable kind."""
    catalog = catalog or load_catalog([])
    rng = random.Random(seed)
    tallies = {name: MutationTally() for name in MUTATIONS}
    golden = false_alarms = mutated = caught = 0
    missed: list[str] = []
    for step in golden_steps(catalog):
        golden += 1
        false_alarms += step.audit(step.observation, step.patch) > 0
        for name in MUTATIONS:
            broken = _MUTATORS[name](step, rng)
            if broken is None:
                continue
            mutated += 1
            tallies[name].steps += 1
            if step.audit(*broken) > 0:
                caught += 1
                tallies[name].caught += 1
            elif len(missed) < 20:
                missed.append(f"{name}: {step.task_id} {step.tool.name}")
    return AuditSelftest(seed=seed, steps=golden + mutated, golden=golden, false_alarms=false_alarms,
                         mutated=mutated, caught=caught, by_mutation=tallies, missed=missed)


Broken = tuple[Any, list[dict[str, Any]]]


def _fabricate_entity(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A record that does not exist: an id or name in the observation replaced by an unknown one."""
    if _failed(step):
        return None
    found = [(path, key, value) for path, key, value in walk_strings(step.observation)
             if ID_PATTERN.match(value) or (key is not None and (is_id_key(key) or is_name_key(key)))]
    if not found:
        return None
    path, key, value = rng.choice(found)
    if ID_PATTERN.match(value) or (key is not None and is_id_key(key)):
        fresh = "".join(_fresh_char(c, rng) for c in value)
    else:
        fresh = f"{rng.choice(_GIVEN)} {rng.choice(_FAMILY)}"
    return _set(step.observation, path, fresh), step.patch


def _drop_list_item(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A list that leaves out one of its records."""
    if _failed(step):
        return None
    lists = [(path, items) for path, items in walk_lists(step.observation)
             if len(items) >= 2 and all(isinstance(item, dict) for item in items)]
    if not lists:
        return None
    path, items = rng.choice(lists)
    kept = list(items)
    kept.pop(rng.randrange(len(kept)))
    return _set(step.observation, path, kept), step.patch


def _invent_field(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A field the tool does not have, added to one of the observation's objects."""
    if _failed(step):
        return None
    objects = [path for path, item in walk_objects(step.observation)]
    path = rng.choice(objects)
    observation = copy.deepcopy(step.observation)
    target = _get(observation, path)
    name, value = rng.choice(_INVENTED)
    if name in target:
        return None
    target[name] = value
    return observation, step.patch


def _change_state_value(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A value read from the state reported differently."""
    if _failed(step):
        return None
    after = step.index
    fields = []
    for path, item in walk_objects(step.observation):
        named = own_id(item, numbers=True)
        if named is None:
            continue
        record = after.record_for(*named)
        if record is None:
            continue
        for key, value in item.items():
            if key != named[0] and is_scalar(value) and value is not None and record.value.get(key) == value:
                fields.append(pointer(path, key))
    if not fields:
        return None
    path = rng.choice(fields)
    return _set(step.observation, path, _other(_get(step.observation, path), rng)), step.patch


def _write_read_only(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A read-only call that changes the state."""
    if not step.tool.read_only:
        return None
    leaves = [(path, value) for path, value in _leaves(step.before) if value is not None]
    if not leaves:
        return None
    path, value = rng.choice(leaves)
    return step.observation, [*step.patch, {"op": "replace", "path": path, "value": _other(value, rng)}]


def _contradict_patch(step: GoldenStep, rng: random.Random) -> Broken | None:
    """An observation that reports a value other than the one its own patch writes."""
    if _failed(step) or not step.patch:
        return None
    after = step.index
    touched = [op["path"] for op in step.patch if isinstance(op.get("path"), str)]
    fields = []
    for path, item in walk_objects(step.observation):
        named = own_id(item, numbers=True)
        record = after.record_for(*named) if named is not None else None
        if record is None:
            continue
        for key, value in item.items():
            where = f"{record.path}/{key}"
            if is_scalar(value) and value is not None and record.value.get(key) == value and \
                    any(where == t or where.startswith(t + "/") for t in touched):
                fields.append(pointer(path, key))
    if not fields:
        return None
    path = rng.choice(fields)
    return _set(step.observation, path, _other(_get(step.observation, path), rng)), step.patch


_MUTATORS: dict[str, Callable[[GoldenStep, random.Random], Broken | None]] = {
    "fabricate_entity": _fabricate_entity,
    "drop_list_item": _drop_list_item,
    "invent_field": _invent_field,
    "change_state_value": _change_state_value,
    "write_read_only": _write_read_only,
    "contradict_patch": _contradict_patch,
}

_GIVEN = ("Marguerite", "Tobias", "Ingrid", "Desmond", "Yolanda", "Casimir", "Priya", "Anselm")
_FAMILY = ("Oyelaran", "Vantongeren", "Kowalczyk-Reyes", "Thistlewood", "Abernathy-Quist", "Marchetti")
_INVENTED: list[tuple[str, Any]] = [
    ("risk_score", 0.82), ("escalation_level", "tier-2"), ("verified_by", "system"),
    ("priority_rank", 3), ("last_audit_note", "reviewed, no issues"), ("auto_approved", True),
]


def _failed(step: GoldenStep) -> bool:
    return not isinstance(step.observation, dict) or reports_error(step.observation)


def _fresh_char(char: str, rng: random.Random) -> str:
    if char.isdigit():
        return rng.choice(string.digits)
    if char.isalpha():
        return rng.choice(string.ascii_uppercase if char.isupper() else string.ascii_lowercase)
    return char


def _other(value: Any, rng: random.Random) -> Any:
    """A different value of the same type."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + rng.choice((-3, -2, -1, 1, 2, 5, 10))
    if isinstance(value, float):
        return round(value * rng.choice((0.5, 0.8, 1.25, 2.0)) + 1.0, 3)
    if isinstance(value, str):
        return value + rng.choice((" (revised)", "-X", " pending", "2"))
    return "changed"


def _leaves(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, pointer(path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from _leaves(value, pointer(path, position))
    elif path:
        yield path, node


def _parts(path: str) -> list[str]:
    return list(jsonpointer.JsonPointer(path).parts)


def _get(document: Any, path: str) -> Any:
    return jsonpointer.resolve_pointer(document, path)


def _set(document: Any, path: str, value: Any) -> Any:
    """A copy of `document` with the value at `path` replaced."""
    result = copy.deepcopy(document)
    *parents, last = _parts(path)
    node = result
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return result
