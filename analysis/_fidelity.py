"""How faithful one simulated step is to its golden step: entities, state-derived values, fields, state change.

Pure functions on JSON values; the definitions are written out in docs/metrics.md ("Simulator fidelity").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import jsonpointer
from pydantic import BaseModel, Field, computed_field

# Keys whose values name a record: `id`, `*_id`, `*_ids`, `name`, `*_name`.
_ENTITY_KEY = re.compile(r"(^|_)(id|ids|name|names)$", re.I)
# An identifier-like token: one word of letters and digits (both), e.g. CB-250702, ST0021458, INC-4411.
_ID_TOKEN = re.compile(r"^(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_.:#-]{3,63}$")
# ...but not a date, a time or a quantity with its unit (2025-07-02T13:10, 10:30, 24h, 100ml).
_NOT_AN_ID = re.compile(
    r"^(\d{4}-\d{2}(-\d{2})?([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?"
    r"|\d{1,2}:\d{2}(:\d{2})?|\d+(\.\d+)?[A-Za-z%]{1,4})$"
)
_WORD_BREAK = re.compile(r"[^A-Za-z0-9_.:#-]+")
_REMOVED = object()


class StepFidelity(BaseModel):
    """One simulated step scored against its golden step (the lists name what differed)."""

    ungrounded: list[str] = Field(default_factory=list, description="Entities found in no known source.")
    golden_entities: int = Field(default=0, description="Entities the golden observation lists.")
    omitted: list[str] = Field(default_factory=list, description="Golden entities the observation leaves out.")
    values_compared: int = Field(default=0, description="State-derived golden fields present in both observations.")
    values_differing: list[str] = Field(default_factory=list, description="path: golden -> simulated")
    invented_fields: list[str] = Field(default_factory=list, description="Paths of keys in neither golden nor schema.")
    patch_checked: bool = Field(default=False, description="The tool may write, so the state change is compared.")
    patch_missing: list[str] = Field(default_factory=list, description="Golden changes the simulation lacks.")
    patch_extra: list[str] = Field(default_factory=list, description="Simulated changes the golden step lacks.")
    read_only: bool = Field(default=False, description="The tool is declared read-only.")
    read_only_writes: list[str] = Field(default_factory=list, description="Pointers a read-only call changed.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def grounded(self) -> bool:
        return not self.ungrounded

    @computed_field  # type: ignore[prop-decorator]
    @property
    def complete(self) -> bool:
        return not self.omitted

    @computed_field  # type: ignore[prop-decorator]
    @property
    def values_agree(self) -> bool:
        return not self.values_differing

    @computed_field  # type: ignore[prop-decorator]
    @property
    def patch_agrees(self) -> bool:
        return not self.patch_missing and not self.patch_extra

    @computed_field  # type: ignore[prop-decorator]
    @property
    def faithful(self) -> bool:
        return (self.grounded and self.complete and self.values_agree and not self.invented_fields
                and self.patch_agrees and not self.read_only_writes)


@dataclass(frozen=True)
class GoldenAnswer:
    """What a simulated step is scored against: the golden answer and everything the simulator could know."""

    state_before: dict[str, Any]
    state_after: dict[str, Any]
    arguments: dict[str, Any]
    observation: Any
    earlier_observations: tuple[Any, ...] = ()
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    # state_pairs of the two states, when the caller computed them already (a step's state after is the next
    # step's state before).
    pairs_before: frozenset[tuple[str, tuple[str, Any]]] | None = None
    pairs_after: frozenset[tuple[str, tuple[str, Any]]] | None = None


def score_step(golden: GoldenAnswer, observation: Any, state_after: dict[str, Any]) -> StepFidelity:
    """Score a simulated observation and the state it leaves (from `golden.state_before`) against `golden`."""
    entities = _entities(observation)
    golden_entities = _entities(golden.observation)
    shown = _vocabulary([observation])
    answered = _vocabulary([golden.observation, golden.arguments])
    unknown = {e for e in entities if e.lower() not in answered}
    if unknown:  # only then read the whole state and history, the costly part
        known = _vocabulary([golden.state_before, golden.state_after, *golden.earlier_observations])
        unknown = {e for e in unknown if e.lower() not in known}
    from_state = (golden.pairs_before or state_pairs(golden.state_before)) | (
        golden.pairs_after or state_pairs(golden.state_after))
    differing: list[str] = []
    invented: list[str] = []
    compared = _compare(golden.observation, observation, "", None, from_state, _schema_keys(golden.output_schema),
                        differing, invented)
    simulated_change = _changes(golden.state_before, state_after)
    result = StepFidelity(
        ungrounded=sorted(unknown),
        golden_entities=len(golden_entities),
        omitted=sorted(e for e in golden_entities if e.lower() not in shown),
        values_compared=compared, values_differing=differing, invented_fields=invented,
        read_only=golden.read_only,
    )
    if golden.read_only:
        result.read_only_writes = sorted(simulated_change)
    else:
        golden_change = _changes(golden.state_before, golden.state_after)
        result.patch_checked = True
        result.patch_missing = sorted(p for p, v in golden_change.items()
                                      if p not in simulated_change or not _same(simulated_change[p], v))
        result.patch_extra = sorted(p for p, v in simulated_change.items()
                                    if p not in golden_change or not _same(golden_change[p], v))
    return result


def _walk(value: Any, key: str | None = None) -> Iterator[tuple[str | None, Any]]:
    """Every (nearest dict key, value) in a JSON value, containers included; dict keys come as (None, key)."""
    stack: list[tuple[str | None, Any]] = [(key, value)]
    while stack:
        key, value = stack.pop()
        yield key, value
        if isinstance(value, dict):
            for name, item in value.items():
                yield None, name
                stack.append((name, item))
        elif isinstance(value, list):
            stack.extend((key, item) for item in value)


def _is_id(text: object) -> bool:
    return isinstance(text, str) and bool(_ID_TOKEN.match(text)) and not _NOT_AN_ID.match(text)


def _entities(value: Any) -> set[str]:
    """Record names and ids: values under id/name keys, identifier-like strings and identifier-like keys."""
    found: set[str] = set()
    for key, item in _walk(value):
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            continue
        text = str(item).strip()
        if not text:
            continue
        if (key is not None and _ENTITY_KEY.search(key)) or (isinstance(item, str) and _is_id(text)):
            found.add(text)
    return found


def _vocabulary(values: Iterable[Any]) -> set[str]:
    """Every string, key and number in `values`, whole and word by word, lower-cased."""
    words: set[str] = set()
    for value in values:
        for _, item in _walk(value):
            if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                text = str(item).strip().lower()
                words.add(text)
                words.update(word.strip(".:") for word in _WORD_BREAK.split(text))
    return words


def _same(a: Any, b: Any) -> bool:
    """JSON equality: 12 == 12.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def _leaf_key(value: Any) -> tuple[str, Any] | None:
    if value is None or isinstance(value, (dict, list)) or value == "":
        return None
    return (type(value).__name__ if isinstance(value, bool) else "v", value if isinstance(value, (bool, str))
            else float(value))


def state_pairs(state: Any) -> frozenset[tuple[str, tuple[str, Any]]]:
    """(key, value) of every scalar in the state (a list's items under the list's key): what an observation
    field may have been read from."""
    pairs = set()
    stack: list[tuple[str | None, Any]] = [(None, state)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.items())
        elif isinstance(value, list):
            stack.extend((key, item) for item in value)
        elif key is not None and (leaf := _leaf_key(value)) is not None:
            pairs.add((key, leaf))
    return frozenset(pairs)


def _schema_keys(schema: Any) -> set[str]:
    """Every property name declared anywhere in a JSON Schema."""
    names: set[str] = set()
    if isinstance(schema, dict):
        properties = schema.get("properties")
        if isinstance(properties, dict):
            names.update(properties)
        for value in schema.values():
            names |= _schema_keys(value)
    elif isinstance(schema, list):
        for value in schema:
            names |= _schema_keys(value)
    return names


def _identity(item: Any) -> str | None:
    """The id (or name) that identifies a list item, when it is a record that has one."""
    if not isinstance(item, dict):
        return None
    for key in sorted(item, key=lambda k: (not (k == "id" or k.endswith("_id")), k != "name")):
        if _ENTITY_KEY.search(key) and isinstance(item[key], (str, int)) and not isinstance(item[key], bool):
            return str(item[key])
    return None


def _pairs(golden: list[Any], simulated: list[Any]) -> Iterator[tuple[str, Any, Any]]:
    """Matched list items: by their ids when every golden item has a distinct one, else by position."""
    ids = [_identity(item) for item in golden]
    if ids and None not in ids and len(set(ids)) == len(ids):
        by_id = {_identity(item): item for item in simulated}
        for identity, item in zip(ids, golden, strict=True):
            if identity in by_id:
                yield f"[{identity}]", item, by_id[identity]
        return
    for index, (item, other) in enumerate(zip(golden, simulated, strict=False)):
        yield f"[{index}]", item, other


def _compare(golden: Any, simulated: Any, path: str, key: str | None, from_state: frozenset, schema_keys: set[str],
             differing: list[str], invented: list[str]) -> int:
    """Walk both observations together; returns how many state-derived golden fields were compared."""
    if isinstance(golden, dict) and isinstance(simulated, dict):
        compared = 0
        for name in simulated:
            if name not in golden and name not in schema_keys and not _is_id(name):
                invented.append(f"{path}/{name}")
        for name, value in golden.items():
            if name in simulated:
                compared += _compare(value, simulated[name], f"{path}/{name}", name, from_state, schema_keys,
                                     differing, invented)
        return compared
    if isinstance(golden, list) and isinstance(simulated, list):
        return sum(_compare(g, s, f"{path}{label}", key, from_state, schema_keys, differing, invented)
                   for label, g, s in _pairs(golden, simulated))
    leaf = _leaf_key(golden)
    if key is None or leaf is None or (key, leaf) not in from_state:
        return 0
    if not _same(golden, simulated):
        differing.append(f"{path or '/'}: {golden!r} -> {simulated!r}")
    return 1


def _flatten(value: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for name, item in value.items():
            yield from _flatten(item, _child(pointer, name))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from _flatten(item, f"{pointer}/{index}")
    else:
        yield pointer, value


def _child(pointer: str, name: Any) -> str:
    """The JSON Pointer of the member `name` under `pointer`."""
    return f"{pointer}/{jsonpointer.escape(str(name))}"


def _changes(before: Any, after: Any, pointer: str = "") -> dict[str, Any]:
    """What a state change did, leaf by leaf: pointer -> new value (or a removal marker).

    Equal subtrees (Python equality) are skipped with one comparison, so the cost follows the change, not the
    state; leaves compare as JSON values.
    """
    if isinstance(before, dict) and isinstance(after, dict) and before and after:
        changed: dict[str, Any] = {}
        for name in before.keys() | after.keys():
            if name not in after:
                changed.update((p, _REMOVED) for p, _ in _flatten(before[name], _child(pointer, name)))
            elif name not in before:
                changed.update(_flatten(after[name], _child(pointer, name)))
            elif before[name] != after[name]:
                changed.update(_changes(before[name], after[name], _child(pointer, name)))
        return changed
    if isinstance(before, list) and isinstance(after, list) and before and after:
        changed = {}
        for index in range(max(len(before), len(after))):
            here = f"{pointer}/{index}"
            if index >= len(after):
                changed.update((p, _REMOVED) for p, _ in _flatten(before[index], here))
            elif index >= len(before):
                changed.update(_flatten(after[index], here))
            elif before[index] != after[index]:
                changed.update(_changes(before[index], after[index], here))
        return changed
    old, new = dict(_flatten(before, pointer)), dict(_flatten(after, pointer))
    result: dict[str, Any] = {p: v for p, v in new.items() if p not in old or not _same(old[p], v)}
    result.update({p: _REMOVED for p in old if p not in new})
    return result
