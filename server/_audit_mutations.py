"""The self-test's mutations (what a simulator gets wrong) and probes (faithful rewordings an audit must
spare), built from the step, its state, its patch and the scenario's collections alone."""

from __future__ import annotations

import copy
import random
import re
import string
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import jsonpointer

from occusim.environments import CollectionRecord

from ._audit_golden import Broken, GoldenStep

# Plain JSON traversal, shared with the index: it picks no target, so the mutations stay independent of how
# the audit decides.
from ._audit_index import pointer, walk_lists, walk_objects

Mutator = Callable[[GoldenStep, random.Random], Broken | None]


# --- mutations -----------------------------------------------------------------------------------------

def fabricate_id(step: GoldenStep, rng: random.Random) -> Broken | None:
    """An identity of a state record, under whatever key, replaced by one no record has."""
    if step.failed:
        return None
    known = {r.identity for r in step.records_before} | {r.identity for r in step.records_after}
    targets = [path for path, value in _scalars(step.observation) if isinstance(value, str) and value in known]
    if not targets:
        return None
    path = rng.choice(targets)
    value = _get(step.observation, path)
    fresh = "".join(_fresh_char(c, rng) for c in value)
    if fresh == value or fresh in known:
        return None
    return _keep(step, observation=_set(step.observation, path, fresh))


def fabricate_name(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A person's or organisation's name a state record holds, reported as a made-up one."""
    if step.failed:
        return None
    names = {v for r in step.records_after for v in r.value.values() if isinstance(v, str) and _NAME.match(v)}
    targets = [path for path, value in _scalars(step.observation) if isinstance(value, str) and value in names]
    if not targets:
        return None
    return _keep(step, observation=_set(step.observation, rng.choice(targets),
                                        f"{rng.choice(_GIVEN)} {rng.choice(_FAMILY)}"))


def change_state_value(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A field an observed object copies from a record it names (by any field) reported differently."""
    if step.failed:
        return None
    identities = _by_identity(step.records_after)
    targets: list[str] = []
    for path, item in walk_objects(step.observation):
        for value in list(item.values()):
            for record in identities.get(str(value), []) if _is_id_value(value) else []:
                targets.extend(pointer(path, k) for k, v in item.items()
                               if _scalar(v) and v is not None and v != value and record.value.get(k) == v)
    if not targets:
        return None
    path = rng.choice(sorted(set(targets)))
    return _keep(step, observation=_set(step.observation, path, _other(_get(step.observation, path), rng)))


def swap_entity(step: GoldenStep, rng: random.Random) -> Broken | None:
    """An observed object reporting one record under the identity of another record of its collection."""
    if step.failed:
        return None
    identities = _by_identity(step.records_after)
    targets = []
    for path, item in walk_objects(step.observation):
        for key, value in item.items():
            for record in identities.get(str(value), []) if _is_id_value(value) else []:
                shared = [k for k, v in item.items() if k != key and _scalar(v) and record.value.get(k) == v]
                others = [r for r in step.records_after if r.collection is record.collection
                          and r.identity != record.identity
                          and any(k in r.value and r.value[k] != item[k] for k in shared)]
                if len(shared) >= 2 and others:
                    targets.append((pointer(path, key), others))
    if not targets:
        return None
    path, others = rng.choice(targets)
    return _keep(step, observation=_set(step.observation, path, rng.choice(others).identity))


def drop_list_item(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A list of records that leaves out one the state holds: an item every scalar field of which (two or
    more) a state object holds, equal. Items the tool computes or draws from outside the state (readings
    the rules generate, findings of an inspection) are not dropped: no reader of the state could miss them."""
    if step.failed:
        return None
    held = [{k: v for k, v in item.items() if _scalar(v)} for _, item in walk_objects(step.after)]
    targets = [(path, items, position) for path, items in walk_lists(step.observation)
               if len(items) >= 2 and all(isinstance(item, dict) for item in items)
               for position, item in enumerate(items) if _held(item, held)]
    if not targets:
        return None
    path, items, position = rng.choice(targets)
    kept = list(items)
    kept.pop(position)
    return _keep(step, observation=_set(step.observation, path, kept))


def _held(item: dict[str, Any], held: list[dict[str, Any]]) -> bool:
    fields = {k: v for k, v in item.items() if _scalar(v)}
    return len(fields) >= 2 and any(all(k in h and h[k] == v for k, v in fields.items()) for h in held)


def misderive_field(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A field the scenario declares computed from others (a line's amount) reported off its formula, by an
    object that names its record and copies the field; where the patch writes the field, written so too,
    as a simulator that computed it wrong would."""
    chosen = _misderived_target(step, rng)
    if chosen is None:
        return None
    path, field, record, wrong = chosen
    patch = [_rewritten(op, record.path, field, wrong) for op in step.patch]
    return _keep(step, observation=_set(step.observation, pointer(path, field), wrong), patch=patch)


def misderive_held_field(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A derived field reported just as the state holds it, where the state holds it off its formula, as an
    earlier answer that computed it wrong would have written it: the state agrees with the observation, so
    only the field's formula tells."""
    chosen = _misderived_target(step, rng)
    if chosen is None:
        return None
    path, field, record, wrong = chosen
    before = copy.deepcopy(step.before)
    if _resolves(before, pointer(record.path, field)):
        jsonpointer.set_pointer(before, pointer(record.path, field), wrong)
    patch = [_rewritten(op, record.path, field, wrong) for op in step.patch]
    return Broken(_set(step.observation, pointer(path, field), wrong), patch, step.arguments, step.tool, before)


def _misderived_target(step: GoldenStep, rng: random.Random) -> tuple[str, str, CollectionRecord, float] | None:
    """One derived field of a step that succeeded (observed object, field, record) and a value off its
    formula, or None where the step reports none."""
    if step.failed:
        return None
    targets = _derived_targets(step)
    if not targets:
        return None
    path, field, held, record, tolerance = rng.choice(targets)
    return path, field, record, _misderived(held, tolerance, rng)


def _derived_targets(step: GoldenStep) -> list[tuple[str, str, float, CollectionRecord, float]]:
    """(observed object, field, value, record, tolerance) for every derived field a record's collection
    declares that an observed object naming the record reports as the record holds it."""
    targets: list[tuple[str, str, float, CollectionRecord, float]] = []
    for record in step.records_after:
        for derived in record.collection.derived:
            held = record.value.get(derived.field)
            if isinstance(held, bool) or not isinstance(held, int | float):
                continue
            targets.extend((path, derived.field, held, record, derived.tolerance)
                           for path, item in walk_objects(step.observation)
                           if item.get(derived.field) == held and record.identity in map(str, item.values()))
    return targets


def _misderived(held: float, tolerance: float, rng: random.Random) -> float:
    """A value off the derived one by well over the formula's tolerance."""
    return round(held + rng.choice((-1, 1)) * max(1.0, 100 * tolerance, 0.1 * abs(held)), 2)


def _rewritten(op: dict[str, Any], record: str, field: str, value: Any) -> dict[str, Any]:
    """A patch operation with the record's field written as `value`, if it writes that field."""
    target = op.get("path")
    if not isinstance(target, str) or "value" not in op:
        return op
    if target == f"{record}/{field}":
        return {**op, "value": value}
    if target == record and isinstance(op["value"], dict) and field in op["value"]:
        return {**op, "value": {**op["value"], field: value}}
    return op


def invent_field(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A field the tool does not have, added to one of the observation's objects."""
    if step.failed:
        return None
    path = rng.choice([path for path, _ in walk_objects(step.observation)])
    name, value = rng.choice(_INVENTED)
    observation = copy.deepcopy(step.observation)
    target = _get(observation, path)
    if name in target:
        return None
    target[name] = value
    return _keep(step, observation=observation)


def write_read_only(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A read-only call that changes a record."""
    if not step.tool.read_only:
        return None
    leaves = [(path, value) for path, value in _scalars(step.before) if value is not None]
    if not leaves:
        return None
    path, value = rng.choice(leaves)
    return _keep(step, patch=[*step.patch, {"op": "replace", "path": path, "value": _other(value, rng)}])


def contradict_patch(step: GoldenStep, rng: random.Random) -> Broken | None:
    """An observed value the patch writes (under the same field) reported otherwise."""
    if step.failed:
        return None
    written: dict[str, list[Any]] = {}
    for op in step.patch:
        if op.get("op") in ("add", "replace") and _scalar(op.get("value")) and op.get("value") is not None:
            written.setdefault(str(op.get("path")).rsplit("/", 1)[-1], []).append(op["value"])
    targets = [path for path, value in _scalars(step.observation)
               if value in written.get(jsonpointer.unescape(path.rsplit("/", 1)[-1]), []) and not isinstance(value, bool)]
    if not targets:
        return None
    path = rng.choice(targets)
    return _keep(step, observation=_set(step.observation, path, _other(_get(step.observation, path), rng)))


def contradict_added_record(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A field of a record the patch adds, reported otherwise by the observation."""
    if step.failed:
        return None
    added = [op["value"] for op in step.patch if op.get("op") == "add" and isinstance(op.get("value"), dict)]
    targets: list[str] = []
    for path, item in walk_objects(step.observation):
        for record in added:
            common = [k for k, v in item.items() if _scalar(v) and v is not None and record.get(k) == v]
            if len(common) >= 3:
                targets.extend(pointer(path, k) for k in common if not isinstance(item[k], bool))
    if not targets:
        return None
    path = rng.choice(targets)
    return _keep(step, observation=_set(step.observation, path, _other(_get(step.observation, path), rng)))


def not_found_existing(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A record the call names, which the state holds, reported as not found."""
    known = {r.identity for r in step.records_before}
    named = [v for v in _argument_scalars(step.arguments) if isinstance(v, str) and v in known]
    if not named:
        return None
    value = rng.choice(named)
    message = rng.choice(_NOT_FOUND).format(value=value)
    return _keep(step, observation={"error": {"type": rng.choice(("not_found", "tool_error")), "message": message}},
                 patch=[])


def success_without_patch(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A write reported done whose patch changes nothing."""
    if step.failed or not step.patch:
        return None
    return _keep(step, patch=[])


def wrong_record_patch(step: GoldenStep, rng: random.Random) -> Broken | None:
    """The patch applied to another record of the collection than the one the call names."""
    if step.failed or not step.patch:
        return None
    named = {v for v in _argument_scalars(step.arguments) if isinstance(v, str | int)}
    for op in step.patch:
        path = op.get("path")
        if not isinstance(path, str):
            continue
        record = _containing(step.records_before, path)
        if record is None or record.identity not in {str(v) for v in named}:
            continue
        rest = path[len(record.path):]
        others = [r for r in step.records_before if r.collection is record.collection and r.path != record.path
                  and _resolves(step.before, r.path + rest.rsplit("/", 1)[0])]
        if not others:
            continue
        other = rng.choice(others)
        patch = [{**o, "path": other.path + str(o["path"])[len(record.path):]}
                 if str(o.get("path", "")).startswith(record.path + "/") else o for o in step.patch]
        return _keep(step, patch=patch)
    return None


def error_with_patch(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A call reported as failed whose patch changes the state anyway."""
    if step.failed or not step.patch:
        return None
    return _keep(step, observation={"error": {"type": "tool_error", "message": "the request was rejected"}})


MUTATORS: dict[str, Mutator] = {
    "fabricate_id": fabricate_id,
    "fabricate_name": fabricate_name,
    "change_state_value": change_state_value,
    "swap_entity": swap_entity,
    "drop_list_item": drop_list_item,
    "misderive_field": misderive_field,
    "misderive_held_field": misderive_held_field,
    "invent_field": invent_field,
    "write_read_only": write_read_only,
    "contradict_patch": contradict_patch,
    "contradict_added_record": contradict_added_record,
    "not_found_existing": not_found_existing,
    "success_without_patch": success_without_patch,
    "wrong_record_patch": wrong_record_patch,
    "error_with_patch": error_with_patch,
}


# --- probes: faithful changes ---------------------------------------------------------------------------

def whitespace(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A text with a space doubled and a trailing space."""
    targets = [path for path, value in _scalars(step.observation) if isinstance(value, str) and " " in value.strip()]
    if not targets:
        return None
    path = rng.choice(targets)
    value: str = _get(step.observation, path)
    return _keep(step, observation=_set(step.observation, path, value.replace(" ", "  ", 1) + " "))


def iso_variant(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A date-time written in another ISO-8601 form of the same instant."""
    targets = [(path, value) for path, value in _scalars(step.observation)
               if isinstance(value, str) and _DATE_TIME.match(value)]
    if not targets:
        return None
    path, value = rng.choice(targets)
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        other = moment.isoformat(timespec="seconds") + (".000" if rng.random() < 0.5 else "")
        other = other if other != value else moment.isoformat(timespec="minutes")
    else:
        other = moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", rng.choice(("Z", "+00:00")))
    if other == value:
        return None
    return _keep(step, observation=_set(step.observation, path, other))


def key_order(step: GoldenStep, rng: random.Random) -> Broken | None:
    """Every object of the observation with its keys in reverse order."""
    if not isinstance(step.observation, dict):
        return None
    return _keep(step, observation=_reversed(step.observation))


def float_noise(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A number off by a relative 1e-12, as a float formatted another way is."""
    targets = [path for path, value in _scalars(step.observation)
               if isinstance(value, int | float) and not isinstance(value, bool) and value != 0]
    if not targets:
        return None
    path = rng.choice(targets)
    return _keep(step, observation=_set(step.observation, path, float(_get(step.observation, path)) * (1 + 1e-12)))


def narrowed_filter(step: GoldenStep, rng: random.Random) -> Broken | None:
    """A list of records narrowed by a lower date bound the call now gives (a declared `from_date`): the
    records listed are those on or after it."""
    if step.failed:
        return None
    for path, items in walk_lists(step.observation):
        keys = {k for item in items if isinstance(item, dict) for k, v in item.items()
                if isinstance(v, str) and _DATE.match(v)}
        for key in sorted(keys):
            if any(not isinstance(i, dict) or not isinstance(i.get(key), str) or not _DATE.match(i[key])
                   for i in items):
                continue
            days = sorted({str(item[key])[:10] for item in items})
            if len(days) < 2:
                continue
            cutoff = days[-1]
            kept = [item for item in items if str(item[key])[:10] >= cutoff]
            if not kept or len(kept) == len(items):
                continue
            tool = step.tool.model_copy(deep=True)
            tool.input_schema.setdefault("properties", {})["from_date"] = {"type": "string", "format": "date"}
            return Broken(_set(step.observation, path, kept), step.patch, {**step.arguments, "from_date": cutoff},
                          tool)
    return None


PROBES: dict[str, Mutator] = {
    "whitespace": whitespace,
    "iso_variant": iso_variant,
    "key_order": key_order,
    "float_noise": float_noise,
    "narrowed_filter": narrowed_filter,
}


# --- helpers ---------------------------------------------------------------------------------------------

_NAME = re.compile(r"^[A-Z][a-z]+\.?(?: [A-Z][A-Za-z'.-]+){1,3}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")
_GIVEN = ("Marguerite", "Tobias", "Ingrid", "Desmond", "Yolanda", "Casimir", "Priya", "Anselm")
_FAMILY = ("Oyelaran", "Vantongeren", "Kowalczyk-Reyes", "Thistlewood", "Abernathy-Quist", "Marchetti")
_INVENTED: list[tuple[str, Any]] = [
    ("risk_score", 0.82), ("escalation_level", "tier-2"), ("verified_by", "system"),
    ("priority_rank", 3), ("last_audit_note", "reviewed, no issues"), ("auto_approved", True),
]
_NOT_FOUND = ("{value} not found", "No record with id {value} exists", "Unknown identifier: {value}")


def _keep(step: GoldenStep, *, observation: Any = None, patch: list[dict[str, Any]] | None = None) -> Broken:
    return Broken(step.observation if observation is None else observation, step.patch if patch is None else patch,
                  step.arguments, step.tool)


def _by_identity(records: list[CollectionRecord]) -> dict[str, list[CollectionRecord]]:
    found: dict[str, list[CollectionRecord]] = {}
    for record in records:
        found.setdefault(record.identity, []).append(record)
    return found


def _containing(records: list[CollectionRecord], path: str) -> CollectionRecord | None:
    matches = [r for r in records if path.startswith(r.path + "/")]
    return max(matches, key=lambda r: len(r.path)) if matches else None


def _resolves(document: Any, path: str) -> bool:
    try:
        jsonpointer.resolve_pointer(document, path)
    except jsonpointer.JsonPointerException:
        return False
    return True


def _is_id_value(value: Any) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _scalar(value: Any) -> bool:
    return not isinstance(value, dict | list)


def _scalars(node: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _scalars(value, pointer(path, key))
    elif isinstance(node, list):
        for position, value in enumerate(node):
            yield from _scalars(value, pointer(path, position))
    elif path:
        yield path, node


def _argument_scalars(node: Any) -> Iterator[Any]:
    for _, value in _scalars(node):
        yield value


def _reversed(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _reversed(node[key]) for key in reversed(list(node))}
    if isinstance(node, list):
        return [_reversed(value) for value in node]
    return node


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


def _get(document: Any, path: str) -> Any:
    return jsonpointer.resolve_pointer(document, path)


def _set(document: Any, path: str, value: Any) -> Any:
    """A copy of `document` with the value at `path` replaced."""
    result = copy.deepcopy(document)
    *parents, last = jsonpointer.JsonPointer(path).parts
    node = result
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return result
