"""`state` checks: a JSON Pointer into the final state compared with an operator.

`any`, `none` and `count` are order-insensitive: they look at every element of a list (or every value of
an object keyed by id) and count those containing `match` and passing the `where` checks, whose pointers
are relative to the element.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from occusim.environments import ELEMENT_OPS, StateCheck, UnresolvedPointer, describe_type, resolve_pointer

from ._json_values import is_number, json_contains, json_equal, short_json
from ._verdict import CheckVerdict

_ORDER_SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def describe_state_check(check: StateCheck) -> str:
    pointer = check.pointer or "(whole state)"
    if check.op in ("exists", "absent"):
        return f"{pointer} {check.op}"
    if check.op in ELEMENT_OPS:
        count = f" {check.value}" if check.op == "count" else ""
        return f"{pointer} {check.op}{count} element {_describe_element(check)}"
    tolerance = f" \u00b1{check.tolerance:g}" if check.tolerance else ""
    return f"{pointer} {check.op} {short_json(check.value)}{tolerance}"


def _describe_element(check: StateCheck) -> str:
    parts = [short_json(check.match)] if check.match is not None else []
    parts += [describe_state_check(sub) for sub in check.where or []]
    return " and ".join(parts)


def check_state(
    check: StateCheck, state: dict[str, Any], *, index: int = 0, item_id: str = ""
) -> CheckVerdict:
    """Evaluate one state check on the final state.

    A pointer that does not resolve fails every op except `absent` (which it satisfies).
    """
    passed, reason = _evaluate(check, state)
    return CheckVerdict(
        index=index,
        id=f"{item_id}#{index}",
        description=describe_state_check(check),
        passed=passed,
        reason=reason,
    )


def _evaluate(check: StateCheck, state: dict[str, Any]) -> tuple[bool, str]:
    try:
        actual = resolve_pointer(state, check.pointer)
    except UnresolvedPointer as missing:
        if check.op == "absent":
            return True, f"{check.pointer} is absent ({missing})"
        return False, f"{check.pointer} does not resolve in the final state: {missing}"
    shown = short_json(actual)
    expected = check.value
    match check.op:
        case "exists":
            return True, f"{check.pointer} exists (= {shown})"
        case "absent":
            return False, f"{check.pointer} exists (= {shown}) but should be absent"
        case "eq":
            ok = _equal(actual, expected, check.tolerance)
            return ok, f"{check.pointer} = {shown}" + ("" if ok else f", expected {short_json(expected)}")
        case "ne":
            ok = not _equal(actual, expected, check.tolerance)
            return ok, f"{check.pointer} = {shown}" + ("" if ok else ", which it must not equal")
        case "contains":
            return _contains(check.pointer, actual, expected)
        case "lt" | "le" | "gt" | "ge":
            return _order(check.pointer, check.op, actual, expected)
        case "between":
            return _between(check.pointer, actual, expected, check.tolerance or 0.0)
        case "any" | "none" | "count":
            return _elements(check, actual)
    raise AssertionError(f"unhandled state op {check.op!r}")  # the rubric model's Literal rules this out


def _contains(pointer: str, actual: Any, expected: Any) -> tuple[bool, str]:
    if isinstance(actual, str):
        if not isinstance(expected, str):
            return False, f"{pointer} is a string; `contains` on a string needs a string value"
        ok = expected in actual
        return ok, f"{pointer} = {short_json(actual)} {'contains' if ok else 'does not contain'} {expected!r}"
    if isinstance(actual, list):
        ok = any(json_equal(element, expected) for element in actual)
        verb = "has" if ok else "has no"
        return ok, f"{pointer} (a list of {len(actual)}) {verb} element {short_json(expected)}"
    if isinstance(actual, dict):
        if not isinstance(expected, str):
            return False, f"{pointer} is an object; `contains` on an object needs a key (a string)"
        ok = expected in actual
        return ok, f"{pointer} (an object) {'has' if ok else 'has no'} key {expected!r}"
    return False, f"{pointer} is {describe_type(actual)}; `contains` needs a string, list or object"


def _order(pointer: str, op: str, actual: Any, expected: Any) -> tuple[bool, str]:
    # Strings compare too, so ISO dates and times can be bounded.
    comparable = (is_number(actual) and is_number(expected)) or (
        isinstance(actual, str) and isinstance(expected, str)
    )
    symbol = _ORDER_SYMBOLS[op]
    if not comparable:
        return False, (
            f"{pointer} = {short_json(actual)} ({describe_type(actual)}) cannot be compared with "
            f"{short_json(expected)} ({describe_type(expected)})"
        )
    ok = {
        "lt": actual < expected,
        "le": actual <= expected,
        "gt": actual > expected,
        "ge": actual >= expected,
    }[op]
    if is_number(actual) and op in ("le", "ge") and json_equal(actual, expected):
        ok = True
    return ok, f"{pointer} = {short_json(actual)}, {'' if ok else 'not '}{symbol} {short_json(expected)}"


def _equal(actual: Any, expected: Any, tolerance: float | None) -> bool:
    if tolerance and is_number(actual) and is_number(expected):
        return abs(actual - expected) <= tolerance or json_equal(abs(actual - expected), tolerance)
    return json_equal(actual, expected)


def _between(pointer: str, actual: Any, bounds: list[Any], tolerance: float) -> tuple[bool, str]:
    low, high = bounds
    shown = f"[{short_json(low)}, {short_json(high)}]" + (f" \u00b1{tolerance:g}" if tolerance else "")
    if is_number(low) and is_number(actual):
        lowest, highest = low - tolerance, high + tolerance
        ok = (actual >= lowest or json_equal(actual, lowest)) and (actual <= highest or json_equal(actual, highest))
    elif isinstance(low, str) and isinstance(actual, str):
        dates = _as_dates(low, high, actual)
        if dates is None:
            ok = low <= actual <= high
        elif dates[2] is None:
            return False, f"{pointer} = {short_json(actual)} is not a date or time comparable with the range {shown}"
        else:
            ok = dates[0] <= dates[2] <= dates[1]
    else:
        return False, (
            f"{pointer} = {short_json(actual)} ({describe_type(actual)}) cannot be compared with the range {shown}"
        )
    return ok, f"{pointer} = {short_json(actual)}, {'' if ok else 'not '}within {shown}"


def _as_dates(low: str, high: str, actual: str) -> tuple[Any, Any, Any] | None:
    """When both bounds are ISO 8601 dates (or both date-times), the three as dates (date-times), the actual
    value None when it is not one (a date-time against date bounds counts by its date); None when the bounds
    are plain text. Text order would put "2026-06-19-X" or "2026-6-2" inside a range of dates."""
    for kind in (date, datetime):
        try:
            bounds = kind.fromisoformat(low), kind.fromisoformat(high)
        except ValueError:
            continue
        if kind is date and (len(low), len(high)) != (10, 10):  # "20260615" is ISO too, but read as text here
            return None
        try:
            value: Any = datetime.fromisoformat(actual)
        except ValueError:
            return (*bounds, None)
        if kind is date:
            return (*bounds, value.date())
        if (value.tzinfo is None) != (getattr(bounds[0], "tzinfo", None) is None):  # validate made both bounds alike
            return (*bounds, None)  # an instant and a wall-clock time cannot be ordered
        return (*bounds, value)
    return None


def all_pass(checks: list[StateCheck] | None, document: Any) -> bool:
    """Whether `document` (an element, a call's arguments) passes every check, pointers relative to it."""
    return all(_evaluate(check, document)[0] for check in checks or [])


def element_matches(check: StateCheck, element: Any) -> bool:
    """Whether one element contains the check's `match` and passes every one of its `where` checks."""
    if check.match is not None and not json_contains(check.match, element):
        return False
    return all_pass(check.where, element)


def _elements(check: StateCheck, actual: Any) -> tuple[bool, str]:
    if isinstance(actual, list):
        elements, noun = actual, f"a list of {len(actual)}"
    elif isinstance(actual, dict):
        elements, noun = list(actual.values()), f"an object of {len(actual)}"
    else:
        return False, f"{check.pointer} is {describe_type(actual)}; `{check.op}` needs a list or an object"
    matching = sum(1 for element in elements if element_matches(check, element))
    wanted = _describe_element(check)
    if check.op == "any":
        ok = matching > 0
    elif check.op == "none":
        ok = matching == 0
    else:
        ok = matching == check.value
    expected = {"any": "at least 1", "none": "none", "count": f"exactly {check.value}"}[check.op]
    return ok, f"{check.pointer} ({noun}) has {matching} element(s) matching {wanted}; expected {expected}"
