"""state checks: every operator, on values that pass and values that fail, and pointers that do not resolve."""

from __future__ import annotations

import pytest

from occusim.environments import StateCheck
from occusim.judge import check_state

STATE = {
    "claims": [
        {"id": "CL-1", "status": "approved", "amount": 1200.0, "flags": ["manual_review"], "note": None},
        {"id": "CL-2", "status": "open", "amount": 80, "flags": []},
    ],
    "ledger": {"balance": 40, "opened": "2024-03-01", "a/b": 1, "t~x": 2},
    "active": True,
}


def verdict(pointer: str, op: str, *value: object):
    kwargs = {"value": value[0]} if value else {}
    return check_state(StateCheck(pointer=pointer, op=op, **kwargs), STATE, index=2, item_id="claim")


@pytest.mark.parametrize(
    ("pointer", "op", "value", "expected"),
    [
        ("/claims/0/status", "eq", "approved", True),
        ("/claims/0/status", "eq", "Approved", False),
        ("/claims/0/amount", "eq", 1200, True),  # 1200 and 1200.0 are the same JSON number
        ("/ledger/balance", "eq", 40.0000000001, True),
        ("/ledger/balance", "eq", 41, False),
        ("/active", "eq", 1, False),  # true is not 1
        ("/active", "eq", True, True),
        ("/claims/1/flags", "eq", [], True),
        ("/claims/0/status", "ne", "open", True),
        ("/claims/0/status", "ne", "approved", False),
        ("/claims/1/amount", "lt", 100, True),
        ("/claims/1/amount", "lt", 80, False),
        ("/claims/1/amount", "le", 80, True),
        ("/claims/1/amount", "gt", 80, False),
        ("/claims/1/amount", "ge", 80, True),
        ("/claims/0/amount", "gt", 1000, True),
        ("/ledger/opened", "lt", "2024-04-01", True),  # ISO dates compare as strings
        ("/ledger/opened", "ge", "2024-04-01", False),
        ("/claims/0/status", "contains", "prov", True),
        ("/claims/0/status", "contains", "denied", False),
        ("/claims/0/flags", "contains", "manual_review", True),
        ("/claims/1/flags", "contains", "manual_review", False),
        ("/ledger", "contains", "balance", True),
        ("/ledger", "contains", "owner", False),
        ("/ledger/a~1b", "eq", 1, True),  # RFC 6901 escapes
        ("/ledger/t~0x", "eq", 2, True),
    ],
)
def test_comparison_ops(pointer: str, op: str, value: object, expected: bool) -> None:
    result = verdict(pointer, op, value)
    assert result.passed is expected, result.reason
    assert result.index == 2 and result.id == "claim#2"
    assert pointer in result.reason


def test_exists_and_absent() -> None:
    assert verdict("/claims/0/note", "exists").passed is True  # null is a value
    assert verdict("/claims/1/note", "exists").passed is False
    assert verdict("/claims/1/note", "absent").passed is True
    present = verdict("/claims/0/status", "absent")
    assert present.passed is False and "should be absent" in present.reason
    assert verdict("/claims/7", "absent").passed is True
    assert verdict("", "exists").passed is True


@pytest.mark.parametrize(
    ("pointer", "op", "fragment"),
    [
        ("/claims/5/status", "eq", "list of 2, index 5 is out of range"),
        ("/claims/first/status", "eq", "'first' is not a list index"),
        ("/claims/0/reviewer", "ne", "/claims/0 has no key 'reviewer'"),
        ("/active/flag", "contains", "/active is a boolean"),
        ("/nothing", "lt", "the root has no key 'nothing'"),
        ("/claims/01", "eq", "not a list index"),
    ],
)
def test_unresolved_pointer_fails_with_reason(pointer: str, op: str, fragment: str) -> None:
    result = verdict(pointer, op, "x")
    assert result.passed is False
    assert "does not resolve" in result.reason and fragment in result.reason


@pytest.mark.parametrize(
    ("pointer", "op", "value", "fragment"),
    [
        ("/claims/0/status", "lt", 5, "cannot be compared"),
        ("/active", "gt", 0, "cannot be compared"),  # booleans are not numbers
        ("/claims/0/amount", "contains", 1, "needs a string, list or object"),
        ("/claims/0/status", "contains", 5, "needs a string value"),
        ("/ledger", "contains", 40, "needs a key"),
    ],
)
def test_type_mismatches_fail_with_reason(pointer: str, op: str, value: object, fragment: str) -> None:
    result = verdict(pointer, op, value)
    assert result.passed is False
    assert fragment in result.reason


def test_description_names_pointer_op_and_value() -> None:
    assert verdict("/claims/0/status", "eq", "approved").description == '/claims/0/status eq "approved"'
    assert verdict("/claims/1/note", "absent").description == "/claims/1/note absent"
