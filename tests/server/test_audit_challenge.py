"""A second, independently seeded challenge of the per-step audit: mutations and faithful rewrites of the
bundled reference steps built from the steps, their states and patches alone, through the public `audit_step`
only (none of the audit's modules or its self-test), each kind reported on its own."""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from occusim.environments import Scenario, Tool, apply_json_patch, load_catalog, reports_error
from occusim.server import audit_step

SEED = 20261203


@dataclass
class Step:
    scenario: Scenario
    tool: Tool
    arguments: dict[str, Any]
    before: dict[str, Any]
    observation: Any
    patch: list[dict[str, Any]]
    earlier: list[Any]

    def flagged(self, observation: Any = None, patch: list[dict[str, Any]] | None = None) -> bool:
        observation = self.observation if observation is None else observation
        patch = self.patch if patch is None else patch
        try:
            after = apply_json_patch(self.before, patch)
        except Exception:
            return True
        return bool(audit_step(self.scenario, self.tool, self.arguments, state_before=self.before,
                               observation=observation, patch=patch, state_after=after,
                               earlier_observations=self.earlier))

    @property
    def ok(self) -> bool:
        return isinstance(self.observation, dict) and not reports_error(self.observation)


def reference_steps() -> Iterator[Step]:
    catalog = load_catalog()
    for task in sorted(catalog.tasks.values(), key=lambda t: t.id):
        scenario = catalog.scenario_of(task)
        state = catalog.initial_state(task)
        earlier: list[Any] = []
        for reference in task.reference_solution:
            tool = scenario.tool(reference.tool)
            if tool is not None:
                yield Step(scenario, tool, reference.arguments, state, reference.observation,
                           reference.state_patch, list(earlier))
            earlier.append(reference.observation)
            state = apply_json_patch(state, reference.state_patch)


# --- the document walked as (parent, key, value) places ------------------------------------------------

def places(node: Any) -> Iterator[tuple[Any, Any, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield node, key, value
            yield from places(value)
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield node, position, value
            yield from places(value)


def entries(state: Any) -> dict[str, dict[str, Any]]:
    """Objects filed in a mapping under a key, by that key (the state's own way of naming records)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for parent, key, value in places(state):
        if isinstance(parent, dict) and isinstance(value, dict) and isinstance(key, str):
            found.setdefault(key, []).append(value)
    return {key: values[0] for key, values in found.items() if len(values) == 1}


def differently(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + rng.choice((7, 13, -4))
    return f"{value} {rng.choice(('amended', 'void', 'n/a'))}"


Change = tuple[Any, list[dict[str, Any]]] | None


# --- mutations ------------------------------------------------------------------------------------------

def stale_value(step: Step, rng: random.Random) -> Change:
    """A field of an object copied from a state entry (named by one of the object's values) changed."""
    if not step.ok:
        return None
    state = entries(apply_json_patch(step.before, step.patch))
    observation = copy.deepcopy(step.observation)
    spots = []
    for _, _, item in places({"": observation}):
        if not isinstance(item, dict):
            continue
        for value in item.values():
            entry = state.get(value) if isinstance(value, str) else None
            if entry is not None:
                spots += [(item, k) for k, v in item.items() if not isinstance(v, dict | list) and v is not None
                          and v != value and entry.get(k) == v]
    if not spots:
        return None
    item, key = rng.choice(spots)
    item[key] = differently(item[key], rng)
    return observation, step.patch


def ghost_id(step: Step, rng: random.Random) -> Change:
    """A value naming a state entry replaced by a name no entry has."""
    if not step.ok:
        return None
    known = set(entries(step.before)) | set(entries(apply_json_patch(step.before, step.patch)))
    observation = copy.deepcopy(step.observation)
    spots = [(parent, key) for parent, key, value in places(observation) if isinstance(value, str) and value in known
             and len(value) >= 3]
    if not spots:
        return None
    parent, key = rng.choice(spots)
    parent[key] = f"{parent[key][:2]}{rng.randrange(10**6, 10**7)}"
    return observation, step.patch


def existing_not_found(step: Step, rng: random.Random) -> Change:
    """An entry the call names, present in the state, reported missing."""
    known = entries(step.before)
    named = [v for _, _, v in places(step.arguments) if isinstance(v, str) and v in known]
    if not named:
        return None
    return {"error": f"Record '{rng.choice(named)}' does not exist"}, []


def no_op_write(step: Step, rng: random.Random) -> Change:
    """A successful write whose patch was lost."""
    return (step.observation, []) if step.ok and step.patch else None


def misdirected_patch(step: Step, rng: random.Random) -> Change:
    """The patch applied to a sibling of the entry the call names."""
    if not step.ok or not step.patch:
        return None
    named = {v for _, _, v in places(step.arguments) if isinstance(v, str)}
    for op in step.patch:
        parts = str(op.get("path", "")).split("/")
        for depth, part in enumerate(parts[:-1]):
            if part not in named or depth == 0:
                continue
            prefix = "/".join(parts[:depth])
            try:
                siblings = apply_json_patch(step.before, [])
                for piece in parts[1:depth]:
                    siblings = siblings[int(piece)] if isinstance(siblings, list) else siblings[piece]
            except (KeyError, IndexError, ValueError, TypeError):
                continue
            if not isinstance(siblings, dict):
                continue
            others = [k for k, v in siblings.items() if k != part and isinstance(v, dict)]
            if not others:
                continue
            other = rng.choice(others)
            old, new = f"{prefix}/{part}/", f"{prefix}/{other}/"
            patch = [{**o, "path": new + str(o["path"])[len(old):]} if str(o.get("path", "")).startswith(old) else o
                     for o in step.patch]
            return step.observation, patch
    return None


def patch_disagrees(step: Step, rng: random.Random) -> Change:
    """The patch writes another value than the one the observation reports under that field."""
    if not step.ok:
        return None
    reported = {(k, repr(v)) for _, k, v in places(step.observation) if not isinstance(v, dict | list)}
    spots = [i for i, op in enumerate(step.patch) if op.get("op") in ("add", "replace")
             and not isinstance(op.get("value"), dict | list | bool) and op.get("value") is not None
             and (str(op["path"]).rsplit("/", 1)[-1], repr(op["value"])) in reported]
    if not spots:
        return None
    patch = copy.deepcopy(step.patch)
    op = patch[rng.choice(spots)]
    op["value"] = differently(op["value"], rng)
    return step.observation, patch


def error_but_written(step: Step, rng: random.Random) -> Change:
    """A failure reported while the patch still changes the state."""
    return ({"error": {"type": "conflict", "message": "could not complete"}}, step.patch) if step.ok and step.patch \
        else None


MUTATIONS: dict[str, Callable[[Step, random.Random], Change]] = {
    "stale_value": stale_value, "ghost_id": ghost_id, "existing_not_found": existing_not_found,
    "no_op_write": no_op_write, "misdirected_patch": misdirected_patch, "patch_disagrees": patch_disagrees,
    "error_but_written": error_but_written,
}


# --- faithful rewrites ----------------------------------------------------------------------------------

def respace(step: Step, rng: random.Random) -> Change:
    observation = copy.deepcopy(step.observation)
    spots = [(p, k) for p, k, v in places(observation) if isinstance(v, str) and " " in v]
    if not spots:
        return None
    parent, key = rng.choice(spots)
    parent[key] = "  ".join(parent[key].split(" "))
    return observation, step.patch


def other_iso_form(step: Step, rng: random.Random) -> Change:
    observation = copy.deepcopy(step.observation)
    spots = [(p, k) for p, k, v in places(observation) if isinstance(v, str) and len(v) >= 16 and v[4] == "-"
             and v[10] == "T" and v[13] == ":"]
    if not spots:
        return None
    parent, key = rng.choice(spots)
    value: str = parent[key]
    if value.endswith("Z"):
        parent[key] = value[:-1] + "+00:00"
    elif len(value) == 16:
        parent[key] = value + ":00"
    elif len(value) >= 19 and value[16] == ":" and value[17:19] == "00" and len(value) == 19:
        parent[key] = value[:16]
    else:
        return None
    return observation, step.patch


def shuffle_keys(step: Step, rng: random.Random) -> Change:
    def shuffled(node: Any) -> Any:
        if isinstance(node, dict):
            keys = list(node)
            rng.shuffle(keys)
            return {k: shuffled(node[k]) for k in keys}
        if isinstance(node, list):
            return [shuffled(v) for v in node]
        return node
    return (shuffled(step.observation), step.patch) if isinstance(step.observation, dict) else None


def int_as_float(step: Step, rng: random.Random) -> Change:
    observation = copy.deepcopy(step.observation)
    spots = [(p, k) for p, k, v in places(observation) if isinstance(v, int) and not isinstance(v, bool)]
    if not spots:
        return None
    parent, key = rng.choice(spots)
    parent[key] = float(parent[key])
    return observation, step.patch


REWRITES: dict[str, Callable[[Step, random.Random], Change]] = {
    "respace": respace, "other_iso_form": other_iso_form, "shuffle_keys": shuffle_keys, "int_as_float": int_as_float,
}


@pytest.fixture(scope="module")
def challenge() -> tuple[dict[str, Counter[str]], dict[str, Counter[str]]]:
    rng = random.Random(SEED)
    caught: dict[str, Counter[str]] = {name: Counter() for name in MUTATIONS}
    alarms: dict[str, Counter[str]] = {name: Counter() for name in REWRITES}
    for step in reference_steps():
        for name, mutate in MUTATIONS.items():
            change = mutate(step, rng)
            if change is not None:
                caught[name]["steps"] += 1
                caught[name]["flagged"] += step.flagged(*change)
        if step.flagged():
            continue
        for name, rewrite in REWRITES.items():
            change = rewrite(step, rng)
            if change is not None:
                alarms[name]["steps"] += 1
                alarms[name]["flagged"] += step.flagged(*change)
    return caught, alarms


def test_the_audit_catches_nine_in_ten_of_the_independent_mutations(challenge):
    caught, _ = challenge
    report = {name: f"{c['flagged']}/{c['steps']}" for name, c in caught.items()}
    assert all(c["steps"] >= 20 for c in caught.values()), report
    assert sum(c["flagged"] for c in caught.values()) >= 0.9 * sum(c["steps"] for c in caught.values()), report
    assert all(c["flagged"] >= 0.8 * c["steps"] for c in caught.values()), report


def test_faithful_rewrites_raise_at_most_three_false_alarms_in_a_hundred(challenge):
    _, alarms = challenge
    report = {name: f"{c['flagged']}/{c['steps']}" for name, c in alarms.items()}
    assert all(c["steps"] >= 50 for c in alarms.values()), report
    assert all(c["flagged"] <= 0.03 * c["steps"] for c in alarms.values()), report
