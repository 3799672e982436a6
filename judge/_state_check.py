"""`state` checks: a JSON Pointer into the final state compared with an operator."""

from __future__ import annotations

from typing import Any

from occusim.environments import StateCheck, UnresolvedPointer, describe_type, resolve_pointer

from ._json_values import is_number, json_equal, short_json
from ._verdict import CheckVerdict

_ORDER_SYMBOLS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def describe_state_check(check: StateCheck) -> str:
    pointer = check.pointer or "(whole state)"
    if check.op in ("exists", "absent"):
        return f"{pointer} {check.op}"
    return f"{pointer} {check.op} {short_json(check.value)}"


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
            ok = json_equal(actual, expected)
            return ok, f"{check.pointer} = {shown}" + ("" if ok else f", expected {short_json(expected)}")
        case "ne":
            ok = not json_equal(actual, expected)
            return ok, f"{check.pointer} = {shown}" + ("" if ok else ", which it must not equal")
        case "contains":
            return _contains(check.pointer, actual, expected)
        case "lt" | "le" | "gt" | "ge":
            return _order(check.pointer, check.op, actual, expected)
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
