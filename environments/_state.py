"""Pure helpers on JSON states: merge patches (RFC 7396), JSON patches (RFC 6902) and stable hashes."""

from __future__ import annotations

import copy
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
