"""Pure helpers on JSON states: merge patches (RFC 7396), JSON patches (RFC 6902), pointers (RFC 6901) and
stable hashes. Library failures surface as PatchError and UnresolvedPointer."""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
from typing import Any

import jsonpatch
from jsonpointer import EndOfList, JsonPointer, JsonPointerException

from ._occusim_error import OccusimError


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


class PatchError(OccusimError, ValueError):
    """An RFC 6902 patch that is malformed or does not apply; the message names the operation and why.

    `index` and `operation` are the failing operation and its position (None when the patch itself is not
    a list); `reason` is why it failed, without the operation.
    """

    def __init__(self, reason: str, *, index: int | None = None, operation: Any = None) -> None:
        self.reason = reason
        self.index = index
        self.operation = operation
        where = f"operation {index} {canonical_json(operation)}: " if index is not None else ""
        super().__init__(where + reason)


# What jsonpatch and jsonpointer raise on a malformed operation or one that does not apply; a value that
# is not JSON data (a set, a class) may also surface as TypeError or AttributeError.
_LIBRARY_ERRORS = (
    jsonpatch.JsonPatchException,
    JsonPointerException,
    LookupError,
    TypeError,
    ValueError,
    AttributeError,
)


def apply_json_patch(state: Any, operations: list[dict[str, Any]]) -> Any:
    """Apply RFC 6902 operations to a copy of `state`, one by one, and return the copy.

    Raises PatchError naming the first operation that is malformed or does not apply; `state` is untouched.
    """
    if not isinstance(operations, list):
        raise PatchError(f"a JSON patch must be a list of operations, got {describe_type(operations)}")
    result = copy.deepcopy(state)
    for index, operation in enumerate(operations):
        if not isinstance(operation, dict):
            raise PatchError(f"an operation must be an object, got {describe_type(operation)}", index=index,
                             operation=operation)
        try:
            result = jsonpatch.JsonPatch([operation]).apply(result, in_place=True)
        except _LIBRARY_ERRORS as error:
            raise PatchError(str(error) or type(error).__name__, index=index, operation=operation) from error
    return result


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def state_hash(state: Any) -> str:
    """A short, stable fingerprint of a state, recorded with every step."""
    return hashlib.sha256(canonical_json(state).encode()).hexdigest()[:16]


class UnresolvedPointer(OccusimError, LookupError):
    """A JSON Pointer that does not lead to a value; the message says where it stopped."""


def resolve_pointer(document: Any, pointer: str) -> Any:
    """The value at an RFC 6901 pointer; raises UnresolvedPointer naming the first segment that is missing."""
    try:
        parsed = JsonPointer(pointer)
    except JsonPointerException as error:
        raise UnresolvedPointer(f"pointer {pointer!r} is not a JSON Pointer: {error}") from None
    value = document
    for depth, key in enumerate(parsed.parts):
        here = JsonPointer.from_parts(parsed.parts[:depth]).path or "the root"
        # Named by its JSON type: clearer than jsonpointer's "cannot apply token" on a scalar.
        if not isinstance(value, dict | list):
            raise UnresolvedPointer(f"{here} is {describe_type(value)}, not an object or list")
        try:
            found = parsed.walk(value, key)
        except JsonPointerException:
            raise UnresolvedPointer(_why_missing(value, key, here)) from None
        if isinstance(found, EndOfList):
            raise UnresolvedPointer(f"{here} is a list, and '-' names the position after its last item")
        value = found
    return value


def _why_missing(container: dict[str, Any] | list[Any], key: str, here: str) -> str:
    if isinstance(container, dict):
        return f"{here} has no key {key!r}{_closest(key, [str(k) for k in container])}"
    try:
        JsonPointer.get_part(container, key)
    except JsonPointerException:
        return f"{here} is a list, and {key!r} is not a list index"
    return f"{here} is a list of {len(container)}, index {key} is out of range"


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
