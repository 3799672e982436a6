"""Pure helpers on JSON states: merge patches (RFC 7396), JSON patches (RFC 6902) and stable hashes."""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from typing import Any

import jsonpatch


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7396 JSON merge patch and return a new document."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def apply_json_patch(state: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    """Apply RFC 6902 operations to a copy of `state`; raises jsonpatch/jsonpointer errors on a bad patch."""
    if not operations:
        return copy.deepcopy(state)
    return jsonpatch.JsonPatch(operations).apply(state, in_place=False)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_hash(state: Any) -> str:
    """A short, stable fingerprint of a state, recorded with every step."""
    return hashlib.sha256(canonical_json(state).encode()).hexdigest()[:16]


class UnresolvedPointer(LookupError):
    """A JSON Pointer that does not lead to a value; the message says where it stopped."""


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at an RFC 6901 pointer; raises UnresolvedPointer naming the first segment that is missing."""
    if pointer == "":
        return document
    if not pointer.startswith("/"):
        raise UnresolvedPointer(f"pointer {pointer!r} must be empty or start with '/'")
    value = document
    walked = ""
    for raw in pointer[1:].split("/"):
        key = raw.replace("~1", "/").replace("~0", "~")
        here = walked or "the root"
        if isinstance(value, dict):
            if key not in value:
                raise UnresolvedPointer(f"{here} has no key {key!r}{_closest(key, [str(k) for k in value])}")
            value = value[key]
        elif isinstance(value, list):
            if not key.isdigit() or (len(key) > 1 and key.startswith("0")):
                raise UnresolvedPointer(f"{here} is a list, and {key!r} is not a list index")
            if int(key) >= len(value):
                raise UnresolvedPointer(f"{here} is a list of {len(value)}, index {key} is out of range")
            value = value[int(key)]
        else:
            raise UnresolvedPointer(f"{here} is {describe_type(value)}, not an object or list")
        walked += "/" + raw
    return value


def describe_type(value: Any) -> str:
    """`a string`, `a number`, `null`...: JSON's names for a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _closest(key: str, keys: list[str]) -> str:
    listed = f" (its keys: {', '.join(keys)})" if 0 < len(keys) <= 12 else ""
    close = difflib.get_close_matches(key, keys, n=1) if len(keys) > 1 else []
    return listed + (f"; did you mean {close[0]!r}?" if close else "")
