"""Bounded generation schemas for small models, and the token cap derived from them."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from occusim.llm._answer_budget import AnswerBounds, answer_token_cap, bounded_schema

BOUNDS = AnswerBounds(max_string=50, max_items=4, max_patch_operations=3, slack=0, min_tokens=1, max_tokens=100_000)
RECORD = {"type": "object", "properties": {"id": {"type": "string"}, "note": {"type": "string", "maxLength": 20},
                                            "level": {"enum": ["low", "high"]}, "at": {"type": "string",
                                                                                      "format": "date-time"}},
          "additionalProperties": False}


def test_free_strings_and_lists_get_the_bounds_and_smaller_declared_limits_stay():
    schema = {"type": "object", "properties": {"items": {"type": "array", "items": RECORD, "maxItems": 2},
                                               "more": {"type": "array", "items": {"type": "string"}},
                                               "state_patch": {"type": "array", "items": {}}}}

    bounded = bounded_schema(schema, BOUNDS)

    record = bounded["properties"]["items"]["items"]["properties"]
    assert record["id"]["maxLength"] == 50 and record["note"]["maxLength"] == 20
    assert "maxLength" not in record["level"] and "maxLength" not in record["at"]
    assert bounded["properties"]["items"]["maxItems"] == 2
    assert bounded["properties"]["more"]["maxItems"] == 4 and bounded["properties"]["more"]["items"]["maxLength"] == 50
    assert bounded["properties"]["state_patch"]["maxItems"] == 3
    assert "maxLength" not in schema["properties"]["more"]["items"], "the input schema is left as it was"


def test_the_cap_grows_with_what_the_schema_admits_and_stays_in_its_range():
    one = {"type": "object", "properties": {"record": RECORD}, "additionalProperties": False}
    many = {"type": "object", "properties": {"records": {"type": "array", "items": RECORD}},
            "additionalProperties": False}

    assert answer_token_cap(bounded_schema(one, BOUNDS), BOUNDS) < answer_token_cap(bounded_schema(many, BOUNDS), BOUNDS)
    tight = AnswerBounds(max_string=50, max_items=4, min_tokens=64, max_tokens=80)
    assert answer_token_cap(bounded_schema(many, tight), tight) == 80
    assert answer_token_cap({"type": "boolean"}, tight) == 64


def _longest_instance(schema):
    """The longest value of a closed, bounded schema, built by hand to check the estimate against."""
    if "enum" in schema:
        return max(schema["enum"], key=lambda v: len(json.dumps(v)))
    if schema.get("type") == "string":
        return "x" * schema.get("maxLength", 0)
    if schema.get("type") == "array":
        return [_longest_instance(schema["items"])] * schema["maxItems"]
    if schema.get("type") == "integer":
        return -10**10
    return {name: _longest_instance(sub) for name, sub in schema["properties"].items()}


strings = st.fixed_dictionaries({"type": st.just("string")})
enums = st.fixed_dictionaries({"enum": st.lists(st.text(max_size=12), min_size=1, max_size=4)})
integers = st.fixed_dictionaries({"type": st.just("integer")})
schemas = st.recursive(
    st.one_of(strings, enums, integers),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.dictionaries(st.from_regex(r"[a-z_]{1,12}", fullmatch=True), inner, min_size=1, max_size=5).map(
            lambda props: {"type": "object", "properties": props, "additionalProperties": False}),
    ),
    max_leaves=12,
)


@given(schemas)
def test_the_longest_answer_a_closed_bounded_schema_admits_fits_its_cap(schema):
    bounded = bounded_schema(schema, BOUNDS)
    longest = json.dumps(_longest_instance(bounded), separators=(",", ":"), ensure_ascii=False)

    assert len(longest) / 2.0 <= answer_token_cap(bounded, BOUNDS) + 1


def test_the_local_backend_bounds_every_schema_it_is_given_and_caps_the_answer_to_fit():
    from pathlib import Path

    from occusim.llm._local import LocalEndpoint

    endpoint = LocalEndpoint(model_path=Path("model.gguf"), api_base="http://127.0.0.1:1/v1", llguidance=False,
                             bounds=BOUNDS)
    answer = {"type": "object", "properties": {"reason": {"type": "string"},
                                               "steps": {"type": "array", "items": {"type": "integer"}}}}

    fitted = endpoint.schema_arguments(answer)
    sent = fitted["response_format"]["json_schema"]["schema"]["properties"]
    assert sent["reason"]["maxLength"] == 50 and sent["steps"]["maxItems"] == 4
    assert fitted["max_tokens"] == answer_token_cap(bounded_schema(answer, BOUNDS), BOUNDS)
    assert endpoint.schema_arguments(answer, 77)["max_tokens"] == 77, "a caller's own cap is kept"


def test_objects_that_list_no_members_are_bounded_and_hold_only_scalars_outside_the_patch():
    answer = {"type": "object", "properties": {
        "observation": {"type": "object", "properties": {"plan": {"type": "object"}, "anything": {}},
                        "additionalProperties": False},
        "state_patch": {"type": "array", "items": {"type": "object", "properties": {"value": {}}}}}}

    bounded = bounded_schema(answer, BOUNDS)["properties"]

    plan = bounded["observation"]["properties"]["plan"]
    assert plan["maxProperties"] == 4
    assert {branch["type"] for branch in plan["additionalProperties"]["anyOf"]} == {"string", "number", "boolean",
                                                                                     "null"}
    assert "anyOf" in bounded["observation"]["properties"]["anything"]
    assert bounded["state_patch"]["items"]["properties"]["value"] == {}, "a patch may add whole records"
    assert "maxProperties" not in bounded["observation"], "declared members are never cut"
    free = {"type": "object", "properties": {"plan": {"type": "object"}}}
    assert answer_token_cap(bounded_schema(free, BOUNDS), BOUNDS) > answer_token_cap(
        bounded_schema({"type": "object", "properties": {"plan": {"type": "boolean"}}}, BOUNDS), BOUNDS)


def test_definitions_a_reference_points_to_are_bounded_too():
    # pydantic writes nested models as `$ref`s into `$defs`: the answer's strings and lists live there.
    schema = {"type": "object", "properties": {"rules": {"type": "array", "items": {"$ref": "#/$defs/Rule"}}},
              "$defs": {"Rule": {"type": "object", "properties": {"text": {"type": "string"},
                                                                  "numbers": {"type": "array",
                                                                              "items": {"type": "string"}}}}}}

    bounded = bounded_schema(schema, BOUNDS)

    rule = bounded["$defs"]["Rule"]["properties"]
    assert rule["text"]["maxLength"] == 50
    assert rule["numbers"]["maxItems"] == 4 and rule["numbers"]["items"]["maxLength"] == 50
    assert bounded["properties"]["rules"]["maxItems"] == 4
