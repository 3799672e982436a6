"""What a fault does to one call: explicit error envelopes (E1) and degraded observations (E2)."""

from __future__ import annotations

import copy
import logging
import random
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import jsonpointer
from jsonpointer import JsonPointer, JsonPointerException
from jsonschema.exceptions import SchemaError as JsonSchemaError
from referencing.exceptions import Unresolvable as ReferencingError

from occusim.environments import InjectedFault, ToolError, ToolErrorType, reports_error

from ._advertised import advertised_validator
from ._faults import IMPLICIT_LABELS
from ._schemas import validator_for

log = logging.getLogger("occusim.server")

# Each explicit label fails the way a real service does: its error type, HTTP status and message.
_EXPLICIT_ERRORS: dict[str, tuple[ToolErrorType, int | None, str]] = {
    "http_500": (
        ToolErrorType.HTTP_ERROR, 500,
        "500 Internal Server Error: the {tool} service failed while processing the request.",
    ),
    "timeout": (
        ToolErrorType.TIMEOUT, 504,
        "The {tool} request timed out after 30 seconds without a response.",
    ),
    "connection_refused": (
        ToolErrorType.CONNECTION_ERROR, None,
        "Connection refused: the {tool} backend is not accepting connections.",
    ),
    "service_unavailable": (
        ToolErrorType.HTTP_ERROR, 503,
        "503 Service Unavailable: {tool} is temporarily unavailable; retry later.",
    ),
}


def explicit_error(label: str, tool: str) -> tuple[dict[str, Any], InjectedFault]:
    """The error envelope the agent sees instead of calling the model (no state change)."""
    kind, status, message = _EXPLICIT_ERRORS[label]
    error = ToolError(type=kind, status=status, message=message.format(tool=tool))
    return error.envelope(), InjectedFault(kind="explicit", label=label, detail=error.message)


def degrade(observation: Any, label: str, *, output_schema: dict[str, Any] | None, previous: Any,
            rng: random.Random) -> tuple[Any, InjectedFault] | None:
    """Degrade a true observation, trying `label` first and the other implicit labels after it.

    `previous` is the latest true answer to the same call (tool and arguments), the one a stale answer
    repeats. Returns the shown observation and its record, or None when no degradation applies: an error
    answer (degrading it would hide or disguise the failure), or nothing to cut, drop or null and no
    different earlier answer; the caller then leaves the fault to a later call. A degradation applies
    only when the result still fits the output schema advertised to clients, which would otherwise
    reject it and turn the implicit fault into an explicit one.
    """
    if reports_error(observation):
        return None
    validator = advertised_validator(output_schema) if output_schema is not None else None
    # An answer the client would reject anyway is degraded as it is: the check protects valid answers.
    guard = validator if validator is not None and validator.is_valid(observation) else None
    order = [label] + [other for other in IMPLICIT_LABELS if other != label]
    for name in order:
        try:
            result = _DEGRADERS[name](observation, output_schema, previous, rng)
        except Exception:
            # The world model's answer is already in hand and its state change is real: a degradation that
            # breaks on an unexpected shape must cost the fault, never the call.
            log.warning("the %s degradation failed; trying the next one", name, exc_info=True)
            continue
        if result is None:
            continue
        shown, detail = result
        if guard is not None and not guard.is_valid(shown):
            continue
        return shown, InjectedFault(kind="implicit", label=name, detail=detail)
    return None


def _truncate_list(observation: Any, _schema: Any, _previous: Any, rng: random.Random) -> tuple[Any, str] | None:
    lists = [(path, value) for path, value in _walk(observation, "") if isinstance(value, list) and len(value) >= 2]
    if not lists:
        return None
    # The longest list is the one whose loss matters; ties go to the first found (outermost).
    path, items = max(lists, key=lambda pair: len(pair[1]))
    keep = min(rng.choice((1, 2)), len(items) - 1)
    shown = copy.deepcopy(observation)
    if not _set(shown, path, copy.deepcopy(items[:keep])):
        return None
    recounted = _recount(shown, path, len(items), keep)
    detail = f"{path or '/'}: {len(items)} -> {keep} items"
    return shown, detail + "".join(f"; {count} {len(items)} -> {keep}" for count in recounted)


# Names of fields that state how many items a list holds: count, item_count, totalCount, total, num_items...
_COUNT_NAME = re.compile(
    r"count|^(total|size|length|n)$|^total_?(items|results|records|entries|rows|matches)$|^num_?[a-z]|^number_?of",
    re.IGNORECASE,
)


def _recount(shown: Any, path: str, before: int, after: int) -> list[str]:
    """Set the counts that stated the list's former length, in the objects around it, to its new length.

    A truncated list whose `count` still says five would give the cut away; a count that differed
    from the list's length (a total over pages) is left alone. Returns the pointers changed.
    """
    changed = []
    parts = JsonPointer(path).parts
    for depth in range(len(parts) - 1, -1, -1):
        around = JsonPointer.from_parts(parts[:depth]).path
        holder = _get(shown, around)
        if not isinstance(holder, dict):
            break  # past a list, counts describe the list, not the items inside one of its entries
        for key, value in holder.items():
            if _COUNT_NAME.search(key) and type(value) is int and value == before:
                holder[key] = after
                changed.append(f"{around}/{jsonpointer.escape(key)}")
    return changed


def _drop_fields(observation: Any, schema: Any, _previous: Any, rng: random.Random) -> tuple[Any, str] | None:
    candidates = _optional_fields(observation, schema)
    if not candidates:
        return None
    chosen = sorted(rng.sample(candidates, min(2, len(candidates))))
    shown = copy.deepcopy(observation)
    dropped = []
    for path in chosen:
        # A field inside one dropped just before has gone with it.
        holder, key = _parent(shown, path)
        if isinstance(holder, dict) and key in holder:
            del holder[key]
            dropped.append(path)
    if not dropped:
        return None
    return shown, "dropped " + ", ".join(dropped)


def _null_fields(observation: Any, schema: Any, _previous: Any, rng: random.Random) -> tuple[Any, str] | None:
    candidates = [
        path for path in _optional_fields(observation, schema)
        if _get(observation, path) not in (None, _MISSING) and not isinstance(_get(observation, path), dict | list)
    ]
    if not candidates:
        return None
    chosen = sorted(rng.sample(candidates, min(2, len(candidates))))
    shown = copy.deepcopy(observation)
    nulled = [path for path in chosen if _set(shown, path, None)]
    if not nulled:
        return None
    return shown, "nulled " + ", ".join(nulled)


def _stale(observation: Any, _schema: Any, previous: Any, _rng: random.Random) -> tuple[Any, str] | None:
    if previous is None or previous == observation or reports_error(previous):
        return None
    return copy.deepcopy(previous), "repeated the previous answer to the same call"


_DEGRADERS = {
    "truncate_list": _truncate_list,
    "drop_fields": _drop_fields,
    "null_fields": _null_fields,
    "stale": _stale,
}


def _optional_fields(observation: Any, schema: Any) -> list[str]:
    """JSON Pointers of object fields that may be left out: optional at their own level of the schema.

    With an output schema, only objects whose subschema is known (followed through properties, items,
    references and the combinators) offer fields, and only those their level does not require; an answer
    the schema does not describe offers none. Without a schema every field is optional except identifiers
    and error messages, which the agent needs to make sense of the answer at all. The top level always
    keeps at least one field.
    """
    if schema is None:
        out = _unschematic_fields(observation)
    elif _satisfies(schema, schema, observation):
        out = []
        _schematic_fields(observation, schema, schema, "", out)
    else:
        out = []
    top_level = [p for p in out if p.count("/") == 1]
    if isinstance(observation, dict) and observation and len(top_level) == len(observation):
        out.remove(top_level[0])
    return out


def _unschematic_fields(observation: Any) -> list[str]:
    out: list[str] = []

    def visit(value: Any, path: str) -> None:
        if isinstance(value, dict):
            for key, child in value.items():
                child_path = f"{path}/{jsonpointer.escape(key)}"
                if not (key == "id" or key.endswith("_id") or key == "error"):
                    out.append(child_path)
                visit(child, child_path)
        elif isinstance(value, list):
            for index, child in enumerate(value[:3]):
                visit(child, f"{path}/{index}")

    visit(observation, "")
    return out


def _schematic_fields(value: Any, sub: Any, root: dict[str, Any], path: str, out: list[str]) -> None:
    shapes = _shapes(sub, value, root, depth=0)
    if shapes is None:
        return  # the schema says nothing certain here: leave this part of the answer whole
    if isinstance(value, dict):
        described = any("properties" in shape or "required" in shape for shape in shapes)
        required: set[str] = set()
        for shape in shapes:
            required.update(shape.get("required") or ())
            for trigger, needs in (shape.get("dependentRequired") or {}).items():
                if trigger in value:
                    required.update(needs)
        for key, child in value.items():
            child_path = f"{path}/{jsonpointer.escape(key)}"
            if described and key not in required:
                out.append(child_path)
            _schematic_fields(child, _field_schema(shapes, key), root, child_path, out)
    elif isinstance(value, list):
        for index, child in enumerate(value[:3]):
            _schematic_fields(child, _item_schema(shapes, index), root, f"{path}/{index}", out)


# Deeper than any hand-written schema nests references; stops a self-referencing one.
_MAX_DEPTH = 32


def _shapes(sub: Any, value: Any, root: dict[str, Any], *, depth: int) -> list[dict[str, Any]] | None:
    """The plain schemas that apply to `value` at `sub`: `sub` itself, its references, every `allOf` part,
    the first `anyOf`/`oneOf` alternative `value` satisfies and the `if` branch taken. None when one of
    them cannot be known (a remote reference, no alternative fits, no schema at all)."""
    if sub is True:
        return [{}]
    if not isinstance(sub, dict) or depth > _MAX_DEPTH:
        return None
    parts: list[Any] = list(sub.get("allOf") or ())
    if "$ref" in sub:
        parts.append(_resolve(root, sub["$ref"]))
    for key in ("anyOf", "oneOf"):
        if key in sub:
            fitting = next((alt for alt in sub[key] if _satisfies(root, alt, value)), None)
            if fitting is None:
                return None
            parts.append(fitting)
    if "if" in sub:
        branch = sub.get("then") if _satisfies(root, sub["if"], value) else sub.get("else")
        if branch is not None:
            parts.append(branch)
    shapes = [sub]
    for part in parts:
        inner = _shapes(part, value, root, depth=depth + 1)
        if inner is None:
            return None
        shapes.extend(inner)
    return shapes


def _field_schema(shapes: list[dict[str, Any]], key: str) -> Any:
    found = []
    for shape in shapes:
        properties = shape.get("properties") or {}
        patterns = [sub for pattern, sub in (shape.get("patternProperties") or {}).items() if re.search(pattern, key)]
        if key in properties:
            found.append(properties[key])
        found.extend(patterns)
        if key not in properties and not patterns and isinstance(shape.get("additionalProperties"), dict):
            found.append(shape["additionalProperties"])
    return _together(found)


def _item_schema(shapes: list[dict[str, Any]], index: int) -> Any:
    found = []
    for shape in shapes:
        prefix = shape.get("prefixItems") or []
        if index < len(prefix):
            found.append(prefix[index])
        elif isinstance(shape.get("items"), dict):
            found.append(shape["items"])
    return _together(found)


def _together(schemas: list[Any]) -> Any:
    if not schemas:
        return None
    return schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _resolve(root: dict[str, Any], reference: Any) -> Any:
    """The subschema a local reference ("#/$defs/x") points to; None for any other reference."""
    if not isinstance(reference, str) or not reference.startswith("#"):
        return None
    return jsonpointer.resolve_pointer(root, unquote(reference[1:]), None)


def _satisfies(root: dict[str, Any], sub: Any, value: Any) -> bool:
    if sub is None:
        return False
    try:
        return validator_for(root).evolve(schema=sub).is_valid(value)
    except (JsonSchemaError, ReferencingError):
        return False


_MISSING = object()


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _walk(child, f"{path}/{jsonpointer.escape(key)}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _walk(child, f"{path}/{index}")


def _get(document: Any, path: str) -> Any:
    """The value at `path`, or _MISSING when the path no longer leads anywhere (a parent dropped or null)."""
    return JsonPointer(path).resolve(document, _MISSING)


def _parent(document: Any, path: str) -> tuple[Any, str | int | None]:
    """The value holding the one at `path`, and its key there; (_MISSING, None) when there is none."""
    try:
        return JsonPointer(path).to_last(document)
    except JsonPointerException:
        return _MISSING, None


def _set(document: Any, path: str, value: Any) -> bool:
    """Replace the value at `path`; False (nothing changed) when it is not there."""
    if not path or _get(document, path) is _MISSING:
        return False
    JsonPointer(path).set(document, value)
    return True
