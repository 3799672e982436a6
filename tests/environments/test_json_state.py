"""JSON patches and pointers on states: one PatchError for every way a patch fails, pointer messages."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from occusim.environments import PatchError, UnresolvedPointer, apply_json_patch, resolve_pointer

STATE = {"patients": [{"id": "P1", "priority": 3}], "log": [], "a/b": {"~x": 1}}

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=8,
)
POINTERS = st.sampled_from(["", "/", "/patients", "/patients/0", "/patients/0/priority", "/patients/-",
                            "/patients/01", "/log/-", "/a~1b/~0x", "/missing/x", "x", "/~2"]) | st.text(max_size=8)
OPERATIONS = st.fixed_dictionaries(
    {},
    optional={
        "op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "frob"]) | JSON,
        "path": POINTERS | JSON,
        "from": POINTERS | JSON,
        "value": JSON,
    },
)


def test_a_patch_applies_to_a_copy():
    patch = [{"op": "replace", "path": "/patients/0/priority", "value": 1}, {"op": "add", "path": "/log/-", "value": "P1"}]
    before = copy.deepcopy(STATE)

    after = apply_json_patch(STATE, patch)

    assert after["patients"][0]["priority"] == 1 and after["log"] == ["P1"]
    assert STATE == before


@pytest.mark.parametrize(
    ("patch", "index", "reason"),
    [
        ([{"op": "replace", "path": "/patients/7/priority", "value": 1}], 0, "out of bounds"),
        ([{"op": "add", "path": "/log/-", "value": 1}, {"op": "remove", "path": "/nurses"}], 1, "nurses"),
        ([{"op": "frob", "path": "/log"}], 0, "frob"),
        ([{"path": "/log"}], 0, "op"),
        ([{"op": "add", "path": "log", "value": 1}], 0, "must start with /"),
        ([{"op": "test", "path": "/patients/0/priority", "value": 4}], 0, "not equal"),
        ([{"op": "move", "from": "/patients", "path": "/patients/0/x"}], 0, "move"),
        ([{"op": "add", "path": 5, "value": 1}], 0, ""),
        (["remove /log"], 0, "an operation must be an object, got a string"),
    ],
)
def test_every_failure_is_one_patch_error_naming_its_operation(patch, index, reason):
    before = copy.deepcopy(STATE)

    with pytest.raises(PatchError) as raised:
        apply_json_patch(STATE, patch)

    error = raised.value
    assert error.index == index and error.operation == patch[index]
    assert reason in error.reason
    assert str(error).startswith(f"operation {index} ")
    assert STATE == before


def test_a_patch_that_is_not_a_list_is_a_patch_error():
    with pytest.raises(PatchError, match="must be a list of operations, got an object") as raised:
        apply_json_patch(STATE, {"op": "remove", "path": "/log"})  # type: ignore[arg-type]
    assert raised.value.index is None


@given(st.lists(OPERATIONS | JSON, max_size=4))
def test_any_patch_applies_or_raises_a_patch_error(patch):
    before = copy.deepcopy(STATE)
    try:
        apply_json_patch(STATE, patch)
    except PatchError as error:
        assert 0 <= error.index < len(patch) and str(error)
    assert STATE == before


@pytest.mark.parametrize(
    ("pointer", "value"),
    [("", STATE), ("/patients/0/priority", 3), ("/a~1b/~0x", 1), ("/log", [])],
)
def test_pointers_resolve(pointer, value):
    assert resolve_pointer(STATE, pointer) == value


@pytest.mark.parametrize(
    ("pointer", "message"),
    [
        ("/patients/0/priority/x", "/patients/0/priority is a number, not an object or list"),
        ("/patients/0/id/0", "/patients/0/id is a string, not an object or list"),
        ("/patients/-", "/patients is a list, and '-' names the position after its last item"),
        ("/patients/01", "/patients is a list, and '01' is not a list index"),
        ("/patients/1", "/patients is a list of 1, index 1 is out of range"),
        ("/a~1b/~0y", "/a~1b has no key '~y' (its keys: ~x)"),
        ("/patient", "the root has no key 'patient' (its keys: patients, log, a/b); did you mean 'patients'?"),
        ("patients", "pointer 'patients' is not a JSON Pointer: Location must start with /"),
        ("/~2", "pointer '/~2' is not a JSON Pointer: Found invalid escape ~2"),
    ],
)
def test_unresolved_pointers_say_where_they_stopped(pointer, message):
    with pytest.raises(UnresolvedPointer) as raised:
        resolve_pointer(STATE, pointer)
    assert str(raised.value) == message


@given(JSON, POINTERS)
def test_any_pointer_resolves_or_raises_unresolved_pointer(document, pointer):
    try:
        resolve_pointer(document, pointer)
    except UnresolvedPointer as error:
        assert str(error)
