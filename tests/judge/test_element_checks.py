"""Order-insensitive list checks (`any`, `none`, `count` with `match` and `where`), `between` and `tolerance`."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from occusim.environments import ReferenceStep, StateCheck, ToolCallCheck
from occusim.judge import check_state, check_tool_call

LOG = [
    {"category": "calibration", "analyzer": "A-2", "reading": 1.1},
    {"category": "ct_deficiency", "analyzer": "A-2", "reading": 0.6, "tags": {"shift": "night"}},
    {"category": "ct_deficiency", "analyzer": "A-3", "reading": 0.9},
]
STATE = {"log": LOG, "rights": {"WR-1": {"ordered_cfs": 6.0}, "WR-2": {"ordered_cfs": 0}}, "now": "2025-07-14"}


def passed(**fields: object) -> bool | None:
    return check_state(StateCheck(**fields), STATE).passed


def test_any_finds_the_element_wherever_the_agent_put_it() -> None:
    assert passed(pointer="/log", op="any", match={"category": "ct_deficiency", "analyzer": "A-2"}) is True
    reordered = {**STATE, "log": list(reversed(LOG))}
    check = StateCheck(pointer="/log", op="any", match={"category": "ct_deficiency", "analyzer": "A-2"})
    assert check_state(check, reordered).passed is True
    assert passed(pointer="/log", op="any", match={"category": "ct_deficiency", "analyzer": "A-9"}) is False


def test_match_is_partial_and_recursive() -> None:
    assert passed(pointer="/log", op="any", match={"tags": {"shift": "night"}}) is True
    assert passed(pointer="/log", op="any", match={"tags": {"shift": "day"}}) is False


def test_none_and_count() -> None:
    assert passed(pointer="/log", op="none", match={"category": "release"}) is True
    assert passed(pointer="/log", op="none", match={"analyzer": "A-3"}) is False
    assert passed(pointer="/log", op="count", match={"category": "ct_deficiency"}, value=2) is True
    assert passed(pointer="/log", op="count", match={"category": "ct_deficiency"}, value=1) is False


def test_where_takes_pointers_and_ops_relative_to_the_element() -> None:
    low = [{"pointer": "/category", "op": "eq", "value": "ct_deficiency"},
           {"pointer": "/reading", "op": "between", "value": [0.5, 0.7]}]
    assert passed(pointer="/log", op="count", where=low, value=1) is True
    both = {"pointer": "/log", "op": "any", "match": {"analyzer": "A-3"}, "where": low}
    assert passed(**both) is False  # A-3's reading is 0.9: match and where must hold on the same element


def test_elements_of_an_object_are_its_values() -> None:
    assert passed(pointer="/rights", op="count", where=[{"pointer": "/ordered_cfs", "op": "eq", "value": 0}],
                  value=1) is True


def test_a_scalar_or_missing_target_fails_with_a_reason() -> None:
    verdict = check_state(StateCheck(pointer="/now", op="any", match={"a": 1}), STATE)
    assert verdict.passed is False and "needs a list or an object" in verdict.reason
    assert passed(pointer="/nothing", op="none", match={"a": 1}) is False


def test_between_dates_compares_dates_not_text() -> None:
    dates = {"pointer": "/now", "op": "between", "value": ["2025-07-01", "2025-07-31"]}
    for inside in ("2025-07-14", "2025-07-01", "2025-07-31T23:59:00Z"):
        assert check_state(StateCheck(**dates), {"now": inside}).passed is True, inside
    for outside in ("2025-07-14-X", "2025-7-2", "2025-07-1", "soon"):  # inside the range as text
        verdict = check_state(StateCheck(**dates), {"now": outside})
        assert verdict.passed is False and "is not a date or time" in verdict.reason, outside
    assert check_state(StateCheck(**dates), {"now": "2025-08-01"}).passed is False
    times = {"pointer": "/now", "op": "between", "value": ["2025-07-01T08:00:00Z", "2025-07-01T09:00:00Z"]}
    assert check_state(StateCheck(**times), {"now": "2025-07-01T10:30:00+02:00"}).passed is True
    assert check_state(StateCheck(**times), {"now": "2025-07-01T08:30:00"}).passed is False  # no zone: unordered
    labels = {"pointer": "/now", "op": "between", "value": ["A-1", "A-9"]}
    assert check_state(StateCheck(**labels), {"now": "A-5"}).passed is True  # other text keeps text order


def test_between_is_closed_and_takes_a_tolerance() -> None:
    assert passed(pointer="/rights/WR-1/ordered_cfs", op="between", value=[6.0, 7]) is True
    assert passed(pointer="/rights/WR-1/ordered_cfs", op="between", value=[5, 6]) is True
    assert passed(pointer="/rights/WR-1/ordered_cfs", op="between", value=[6.1, 7]) is False
    assert passed(pointer="/rights/WR-1/ordered_cfs", op="between", value=[6.1, 7], tolerance=0.1) is True
    assert passed(pointer="/now", op="between", value=["2025-07-01", "2025-07-31"]) is True
    assert passed(pointer="/now", op="between", value=[1, 2]) is False


def test_eq_with_tolerance() -> None:
    assert passed(pointer="/rights/WR-1/ordered_cfs", op="eq", value=6.04, tolerance=0.05) is True
    assert passed(pointer="/rights/WR-1/ordered_cfs", op="eq", value=6.1, tolerance=0.05) is False


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pointer": "/log", "op": "any"}, "needs `match`"),
        ({"pointer": "/log", "op": "count", "match": {"a": 1}, "value": -1}, "whole number"),
        ({"pointer": "/log", "op": "count", "match": {"a": 1}, "value": True}, "whole number"),
        ({"pointer": "/x", "op": "eq", "value": 1, "match": {"a": 1}}, "belong to the ops"),
        ({"pointer": "/x", "op": "between", "value": [2, 1]}, "low <= high"),
        ({"pointer": "/x", "op": "between", "value": ["2026-04-21T09:00", "2026-04-22T07:12:00Z"]},
         "both times with a zone or both without"),
        ({"pointer": "/x", "op": "between", "value": [1]}, "[low, high]"),
        ({"pointer": "/x", "op": "between", "value": [1, "2"]}, "[low, high]"),
        ({"pointer": "/x", "op": "lt", "value": 1, "tolerance": 0.1}, "`tolerance`"),
    ],
)
def test_malformed_checks_are_refused_with_the_reason(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("[", r"\[").replace("`", "`")):
        StateCheck(**fields)


def test_tool_call_arguments_where() -> None:
    steps = [ReferenceStep(tool="set_order", arguments={"right_id": "WR-1", "ordered_cfs": 6.0}, observation={})]
    check = ToolCallCheck(tool="set_order", arguments_match={"right_id": "WR-1"},
                          arguments_where=[StateCheck(pointer="/ordered_cfs", op="between", value=[5.9, 6.0])])
    assert check_tool_call(check, steps).passed is True
    wrong = check.model_copy(update={"arguments_where": [StateCheck(pointer="/ordered_cfs", op="gt", value=6)]})
    verdict = check_tool_call(wrong, steps)
    assert verdict.passed is False and "/ordered_cfs gt 6" in verdict.reason


# --- the matching semantics against a plain model of them -----------------------------------------

scalars = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "c"]), st.booleans())
elements = st.dictionaries(st.sampled_from(["k", "m", "n"]), scalars, max_size=3)


@settings(max_examples=200, deadline=None)
@given(st.lists(elements, max_size=6), st.dictionaries(st.sampled_from(["k", "m"]), scalars, min_size=1, max_size=2),
       st.randoms())
def test_any_none_count_agree_with_a_plain_count_in_every_order(items, match, rng) -> None:
    def same(a: object, b: object) -> bool:
        return type(a) is type(b) and a == b

    expected = sum(1 for element in items if all(k in element and same(element[k], v) for k, v in match.items()))
    shuffled = list(items)
    rng.shuffle(shuffled)
    for order in (items, shuffled):
        state = {"list": order}
        assert check_state(StateCheck(pointer="/list", op="any", match=match), state).passed is (expected > 0)
        assert check_state(StateCheck(pointer="/list", op="none", match=match), state).passed is (expected == 0)
        count = StateCheck(pointer="/list", op="count", match=match, value=expected)
        assert check_state(count, state).passed is True
        other = count.model_copy(update={"value": expected + 1})
        assert check_state(other, state).passed is False


@settings(max_examples=200, deadline=None)
@given(st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.floats(-1e6, 1e6), st.floats(0, 10))
def test_between_is_the_closed_widened_interval(x, a, b, tolerance) -> None:
    low, high = min(a, b), max(a, b)
    check = StateCheck(pointer="/x", op="between", value=[low, high], tolerance=tolerance)
    result = check_state(check, {"x": x}).passed
    if low - tolerance < x < high + tolerance:
        assert result is True
    if x < low - tolerance - 1e-6 or x > high + tolerance + 1e-6:
        assert result is False


# --- any document a scenario file may hold: a typed refusal or a verdict, never a crash ------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-10, 10, allow_nan=False) | st.sampled_from(["a", "/x", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["x", "y", "pointer", "op"]), inner,
                                                                  max_size=3),
    max_leaves=8,
)
check_documents = st.fixed_dictionaries(
    {"pointer": st.sampled_from(["", "/x", "/x/0", "/y/x", "x"]),
     "op": st.sampled_from(["eq", "ne", "lt", "between", "contains", "exists", "absent", "any", "none", "count", "nope"])},
    optional={"value": json_values, "tolerance": st.one_of(st.floats(-1, 1, allow_nan=False), st.text(max_size=2)),
              "match": json_values, "where": st.lists(st.fixed_dictionaries(
                  {"pointer": st.sampled_from(["", "/x"]), "op": st.sampled_from(["eq", "exists", "between"])},
                  optional={"value": json_values}), max_size=2)},
)


@settings(max_examples=300, deadline=None)
@given(check_documents, json_values)
def test_any_check_document_is_refused_with_a_validation_error_or_evaluates(document, state) -> None:
    try:
        check = StateCheck.model_validate(document)
    except ValidationError:
        return
    verdict = check_state(check, {"x": state, "y": {"x": state}})
    assert verdict.passed in (True, False) and verdict.reason
