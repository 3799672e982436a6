"""The record collections of a scenario's state: where each sits, which field identifies its records, what
their fields refer to and which fields are computed from others."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jsonpointer
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ._errors import inconsistent

COLLECTION_PATH = r"^(/[^/]+)+$"


class DerivedField(BaseModel):
    """A record field computed from others of the same record, e.g. `total = quantity * unit_price`."""

    model_config = ConfigDict(extra="forbid")

    field: str = Field(min_length=1)
    formula: str = Field(
        description="Arithmetic over the record's numeric fields: names, numbers, + - * / and parentheses, "
        "min(), max(), round(x, n), abs()."
    )
    tolerance: float = Field(default=0.01, ge=0, description="Largest absolute difference still equal.")

    @field_validator("formula")
    @classmethod
    def _parses(cls, formula: str) -> str:
        problem = formula_problem(formula)
        if problem is not None:
            raise inconsistent(problem)
        return formula


class Collection(BaseModel):
    """Records of one kind in the state: a mapping filing each record under its identity, or a list."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(
        pattern=COLLECTION_PATH,
        description="JSON Pointer of the mapping or list holding the records; a `*` part stands for every key "
        "or position there (/accounts/* : each user's mapping of accounts).",
    )
    key: str | None = Field(
        default=None,
        description="The field holding each record's identity (sku, policy_no, claim_id). None: the key a "
        "mapping files the record under is its identity (a list needs a key).",
    )
    references: dict[str, str] = Field(
        default_factory=dict,
        description="Field -> path of the collection whose identity that field holds (supplier_id: /vendors).",
    )
    derived: list[DerivedField] = Field(default_factory=list)
    inferred: bool = Field(
        default=False,
        description="Inferred from the initial state (imported OccuBench environments), not declared by the "
        "scenario's author.",
    )


@dataclass(frozen=True)
class CollectionRecord:
    """One record of a collection: where it sits in the state, its identity and its fields."""

    collection: Collection
    path: str
    identity: str
    value: dict[str, Any]


def containers(collection: Collection, state: Any) -> Iterator[tuple[str, Any]]:
    """(pointer, node) for every mapping or list the collection's path names in `state` (`*` expanded)."""
    nodes: list[tuple[str, Any]] = [("", state)]
    for part in jsonpointer.JsonPointer(collection.path).parts:
        found: list[tuple[str, Any]] = []
        for where, node in nodes:
            if part == "*":
                children = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) \
                    else ()
                found.extend((f"{where}/{jsonpointer.escape(str(k))}", child) for k, child in children)
            elif isinstance(node, dict) and part in node:
                found.append((f"{where}/{jsonpointer.escape(part)}", node[part]))
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                found.append((f"{where}/{part}", node[int(part)]))
        nodes = found
    yield from ((where, node) for where, node in nodes if isinstance(node, dict | list))


def collection_records(collection: Collection, state: Any) -> Iterator[CollectionRecord]:
    """Every record of the collection in `state` whose identity can be read (a string or number)."""
    for where, node in containers(collection, state):
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for filed_under, value in items:
            if not isinstance(value, dict):
                continue
            identity = value.get(collection.key) if collection.key is not None else \
                filed_under if isinstance(node, dict) else None
            if isinstance(identity, str | int) and not isinstance(identity, bool):
                yield CollectionRecord(collection, f"{where}/{jsonpointer.escape(str(filed_under))}",
                                       str(identity), value)


# --- inference -----------------------------------------------------------------------------------------

_ID_ENDINGS = ("_id", "_number", "_no", "_code")


def _id_like(name: str) -> bool:
    return name in ("id", "code", "sku", "number") or name.endswith(_ID_ENDINGS)


def infer_collections(state: dict[str, Any]) -> list[Collection]:
    """The collections a state shows for certain, marked inferred: mappings whose values are records (each
    identified by the key it is filed under, and by a field repeating that key when every record has one),
    mappings of such mappings (`/accounts/*`), and lists of records with one unique id-like field; with the
    references whose every value names a record of another collection."""
    found: list[Collection] = []
    _infer(state, "", found)
    found = [c for c in found if _unique(list(collection_records(c, state)))]
    for collection in found:
        collection.references = _inferred_references(collection, found, state)
    return found


def _unique(records: list[CollectionRecord]) -> bool:
    return len({r.identity for r in records}) == len(records)


def _is_record(node: Any) -> bool:
    return isinstance(node, dict) and bool(node) and any(not isinstance(v, dict | list) for v in node.values())


def _infer(node: Any, path: str, found: list[Collection]) -> None:
    if isinstance(node, dict) and node and path:
        values = list(node.values())
        if all(_is_record(v) for v in values):
            found.append(Collection(path=path, key=_repeated_key(node), inferred=True))
            _infer_within(values, path, found)
            return
        if all(isinstance(v, dict) and v and all(_is_record(r) for r in v.values()) for v in values):
            inner = {k: r for v in values for k, r in v.items()}
            key = _repeated_key(inner)
            if key is not None:  # keys of a nested mapping without one are labels, not identities
                found.append(Collection(path=f"{path}/*", key=key, inferred=True))
            return
    if isinstance(node, list) and node and path and all(_is_record(v) for v in node):
        key = _unique_id_field(node, path)
        if key is not None:
            found.append(Collection(path=path, key=key, inferred=True))
            _infer_within(node, path.rsplit("/", 1)[0] + "/*" if path.endswith("/*") else path, found)
        return
    if isinstance(node, dict):
        for key, value in node.items():
            # A collection path reads `*` as any key, and its segments are never empty: a field named `*` or
            # "" cannot be declared, so nothing under it is inferred.
            if key not in ("*", ""):
                _infer(value, f"{path}/{jsonpointer.escape(str(key))}", found)


def _infer_within(records: list[Any], path: str, found: list[Collection]) -> None:
    """Collections inside records (a campaign's items, a case's members): each field that holds a mapping
    or list of records in every record having it, read across all of them as one (`/campaigns/*/items`)."""
    fields = sorted({k for r in records for k, v in r.items() if isinstance(v, dict | list) and v})
    for name in (f for f in fields if f not in ("*", "")):
        held = [r[name] for r in records if name in r]
        where = f"{path}/*/{jsonpointer.escape(name)}"
        if all(isinstance(v, dict) for v in held):
            _infer({k: v for mapping in held for k, v in mapping.items()}, where, found)
        elif all(isinstance(v, list) for v in held):
            _infer([item for items in held for item in items], where, found)


def _repeated_key(mapping: dict[str, Any]) -> str | None:
    """The field every record of a mapping holds its filing key in (`id` first, then id-like names)."""
    shared = set.intersection(*(set(r) for r in mapping.values()))
    repeating = [k for k in shared if all(r[k] == filed for filed, r in mapping.items())]
    repeating.sort(key=lambda k: (k != "id", not _id_like(k), k))
    return repeating[0] if repeating else None


def _names_items(key: str, path: str) -> bool:
    """Whether a field reads as the id of a list's items (`order_id` of /orders, `id`), not a reference that
    happens to be unique in a short log."""
    stem = key.lower().rsplit("_", 1)[0] if "_" in key else key.lower()
    name = path.rsplit("/", 1)[-1].lower()
    return key == "id" or bool(stem) and (name.startswith(stem) or stem.startswith(name.rstrip("s")))


def _unique_id_field(items: list[dict[str, Any]], path: str) -> str | None:
    shared = set.intersection(*(set(r) for r in items))
    unique = sorted(k for k in shared if _id_like(k) and _names_items(k, path) and all(isinstance(r[k], str) for r in items)
                    and len({r[k] for r in items}) == len(items))
    return unique[0] if len(unique) == 1 else None


def _inferred_references(collection: Collection, found: list[Collection], state: Any) -> dict[str, str]:
    identities = {other.path: {r.identity for r in collection_records(other, state)} for other in found}
    records = list(collection_records(collection, state))
    fields = sorted({k for r in records for k, v in r.value.items() if isinstance(v, str) and k != collection.key})
    references = {}
    for name in fields:
        values = {r.value[name] for r in records if isinstance(r.value.get(name), str)}
        if not _id_like(name):
            continue
        targets = [path for path, known in identities.items() if path != collection.path and values <= known]
        if len(targets) == 1:
            references[name] = targets[0]
    return references


# --- checks against a state ----------------------------------------------------------------------------

def collection_problems(collections: list[Collection], state: Any) -> Iterator[tuple[list[str | int], str]]:
    """(location below `collections`, message) for every declaration the state contradicts."""
    identities: dict[str, set[str]] = {}
    for number, collection in enumerate(collections):
        at: list[str | int] = [number]
        found = list(containers(collection, state))
        if not found:
            yield [*at, "path"], f"{collection.path} names no mapping or list in the initial state"
            continue
        if collection.key is None and any(isinstance(node, list) for _, node in found):
            yield [*at, "key"], f"{collection.path} is a list, so its records need a `key` field"
        seen: dict[str, str] = {}
        for where, node in found:
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for filed, record in items:
                place = f"{where}/{filed}"
                if not isinstance(record, dict):
                    yield [*at, "path"], f"{place} is not a record (an object)"
                    continue
                if collection.key is None:
                    continue
                identity = record.get(collection.key)
                if not isinstance(identity, str | int) or isinstance(identity, bool):
                    yield [*at, "key"], f"{place} has no string or number {collection.key!r}"
                elif isinstance(node, dict) and str(identity) != str(filed):
                    yield [*at, "key"], f"{place} is filed under {filed!r} but its {collection.key} is {identity!r}"
        for record in collection_records(collection, state):
            if record.identity in seen:
                yield [*at, "key"], f"{record.path} and {seen[record.identity]} share the identity {record.identity!r}"
            seen.setdefault(record.identity, record.path)
        identities[collection.path] = set(seen)
    declared = {c.path for c in collections}
    for number, collection in enumerate(collections):
        for name, target in collection.references.items():
            at = [number, "references", name]
            if target not in declared:
                yield at, f"{target} is not a declared collection"
                continue
            for record in collection_records(collection, state):
                value = record.value.get(name)
                if isinstance(value, str | int) and not isinstance(value, bool) and \
                        str(value) not in identities.get(target, set()):
                    yield at, f"{record.path}/{name} is {value!r}, which names no record of {target}"
        for position, derived in enumerate(collection.derived):
            at = [number, "derived", position]
            for record in collection_records(collection, state):
                if derived.field not in record.value:
                    continue
                expected = evaluate_formula(derived.formula, record.value)
                held = record.value[derived.field]
                if expected is not None and _number(held) and abs(held - expected) > derived.tolerance:
                    yield at, f"{record.path}/{derived.field} is {held}, but {derived.formula} gives {expected:g}"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


# --- formulas ------------------------------------------------------------------------------------------

_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
}
_FUNCTIONS: dict[str, Callable[..., float]] = {"min": min, "max": max, "round": round, "abs": abs}


def formula_problem(formula: str) -> str | None:
    """Why `formula` is not plain arithmetic over field names; None when it is."""
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError as error:
        return f"formula {formula!r} does not parse: {error.msg}"
    for node in ast.walk(tree):
        allowed = isinstance(node, ast.Expression | ast.BinOp | ast.UnaryOp | ast.Name | ast.Load | ast.USub |
                             ast.UAdd) or type(node) in _BINARY or \
            isinstance(node, ast.Constant) and _number(node.value) or \
            isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS \
            and not node.keywords
        if not allowed:
            return f"formula {formula!r} may use only field names, numbers, + - * /, min, max, round and abs"
    return None


def evaluate_formula(formula: str, fields: dict[str, Any]) -> float | None:
    """The formula's value over `fields`; None when a field it names is missing or not a number."""
    try:
        return _evaluate(ast.parse(formula, mode="eval").body, fields)
    except (KeyError, TypeError, ZeroDivisionError, OverflowError, ValueError, SyntaxError):
        return None


def _evaluate(node: ast.expr, fields: dict[str, Any]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and _number(node.value):
        return float(node.value)
    if isinstance(node, ast.Name):
        value = fields[node.id]
        if not _number(value):
            raise TypeError(node.id)
        return float(value)
    if isinstance(node, ast.UnaryOp):
        operand = _evaluate(node.operand, fields)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left, fields), _evaluate(node.right, fields))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        arguments = [_evaluate(a, fields) for a in node.args]
        if node.func.id == "round":
            return float(round(arguments[0], int(arguments[1]) if len(arguments) > 1 else 0))
        return float(_FUNCTIONS[node.func.id](*arguments))
    raise TypeError(ast.dump(node))
