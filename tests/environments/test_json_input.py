"""json_problems: what JSON from outside is refused before anything stores or sends it, and where."""

from __future__ import annotations

import json

import pytest

from occusim.environments import JsonInputError, check_json, json_problems


def nested(depth: int, leaf: object = 1) -> object:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def test_plain_json_is_accepted():
    value = {"patient": {"id": "P1", "notes": ["ünïcode ✓", "𝄞", "\u2028", ""]}, "n": -12.5, "ok": None,
             "big": 10**99, "flag": True}
    assert json_problems(value) == []
    assert json_problems(nested(64)) == []


@pytest.mark.parametrize(("value", "path", "fragment"), [
    ({"id": "P\ud8001"}, "id", "unpaired surrogate (U+D800) at position 1"),
    ({"a": [{"b": "x\udfff"}]}, "a[0].b", "unpaired surrogate (U+DFFF)"),
    ({"note": "a\x00b"}, "note", "NUL character (U+0000) at position 1"),
    ({"x": float("inf")}, "x", "inf is not a JSON number"),
    ({"x": float("nan")}, "x", "nan is not a JSON number"),
    ({"x": 10**100}, "x", "more than 100 digits"),
    ({"x": -(10**5000)}, "x", "more than 100 digits"),
    ({"when": {1, 2}}, "when", "a set is not a JSON value"),
])
def test_each_unstorable_value_is_named_by_its_path(value, path, fragment):
    [(where, message)] = json_problems(value)
    assert where == path and fragment in message


def test_keys_are_checked_and_named_without_the_bad_character():
    [(where, message)] = json_problems({"ok": {"k\ud800ey": 1}})
    assert where == "ok.k\\ud800ey" and message.startswith("the key contains an unpaired surrogate")
    json.dumps(where).encode("utf-8")  # the error itself can be sent
    [(where, message)] = json_problems({3: "x"})
    assert "keys must be text, got int" in message


def test_nesting_beyond_the_limit_is_refused_at_its_depth():
    [(where, message)] = json_problems({"x": nested(64)})
    assert message == "nested deeper than the limit of 64 levels"
    assert where.startswith("x[0][0]") and len(where) <= 80
    assert json_problems(nested(10), max_depth=10) == []
    assert json_problems(nested(11), max_depth=10) != []


def test_a_value_nested_far_beyond_the_recursion_limit_is_refused_not_crashed():
    assert json_problems(nested(200_000))[0][1] == "nested deeper than the limit of 64 levels"


def test_at_most_five_problems_are_reported_and_check_json_raises_them():
    value = {f"k{i}": "\x00" for i in range(20)}
    assert len(json_problems(value)) == 5
    with pytest.raises(JsonInputError) as raised:
        check_json({"a": "\x00"}, "the arguments")
    assert str(raised.value).startswith("the arguments cannot be accepted: a: contains a NUL character")
    assert raised.value.problems == [("a", "contains a NUL character (U+0000) at position 0, which cannot be stored")]
