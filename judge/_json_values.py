"""JSON-value comparisons shared by the deterministic checks: equality, partial match, short renderings."""

from __future__ import annotations

import json
import math
from typing import Any

# Floats that went through an LLM-simulated state rarely survive bit-for-bit (1.27 vs 1.2700000001).
_REL_TOL = 1e-9
_ABS_TOL = 1e-9


def is_number(value: Any) -> bool:
    # bool is an int in Python but never a number in JSON.
    return isinstance(value, int | float) and not isinstance(value, bool)


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality: true/1 differ, 40 and 40.0 are equal, floats compare with a tiny tolerance."""
    if is_number(left) and is_number(right):
        return left == right or math.isclose(left, right, rel_tol=_REL_TOL, abs_tol=_ABS_TOL)
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


def json_contains(expected: Any, actual: Any) -> bool:
    """`actual` contains the partial object `expected`.

    Objects match when every expected key is present and matches recursively (extra keys are fine);
    lists match element by element and must have the same length; other values must be JSON-equal.
    """
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(
            k in actual and json_contains(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(expected) == len(actual)
            and all(json_contains(e, a) for e, a in zip(expected, actual, strict=True))
        )
    return json_equal(expected, actual)


def short_json(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
