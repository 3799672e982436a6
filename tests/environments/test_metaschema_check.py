"""The fast checks say what jsonschema's own `check_schema` says, on generated schemas (valid and not) and on
every tool schema of the OccuBench releases, and an invalid schema gets jsonschema's own message: the
single-document check agrees both ways, jsonschema-rs's "valid" (the only verdict of its that is used) is
never wrong."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, SchemaError

from occusim.environments import _occubench, load_catalog
from occusim.environments._metaschema_check import _plainly_valid, schema_problem, single_document_validator

FULL = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)

SCHEMA_KEYWORDS = ["items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                   "unevaluatedItems", "unevaluatedProperties", "contentSchema"]
SCHEMA_LIST_KEYWORDS = ["allOf", "anyOf", "oneOf", "prefixItems"]
SCHEMA_MAP_KEYWORDS = ["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]
VALUE_KEYWORDS = ["$id", "$schema", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$comment",
                  "type", "const", "enum", "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
                  "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "maxContains",
                  "minContains", "maxProperties", "minProperties", "required", "dependentRequired", "title",
                  "description", "default", "deprecated", "readOnly", "writeOnly", "examples", "format",
                  "contentEncoding", "contentMediaType", "dependencies", "$recursiveAnchor", "$recursiveRef",
                  "x-vendor"]

json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-2, 2, allow_nan=False) | st.sampled_from(
    ["", "a", "string", "object", "array", "integer", "strng", "#", "#/$defs/a", "(", "^[a-z]+$", "date-time",
     "https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "meta"])
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.sampled_from(["a", "b", "type", "$ref"]), inner, max_size=3),
                           max_leaves=6)
names = st.sampled_from(["a", "b", "$id", "$schema", "type", "^x"])


def schemas() -> st.SearchStrategy[object]:
    def extend(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
        entry = st.one_of(
            st.tuples(st.sampled_from(SCHEMA_KEYWORDS), inner | json_values),
            st.tuples(st.sampled_from(SCHEMA_LIST_KEYWORDS), st.lists(inner, max_size=3) | json_values),
            st.tuples(st.sampled_from(SCHEMA_MAP_KEYWORDS), st.dictionaries(names, inner, max_size=3) | json_values),
            st.tuples(st.sampled_from(VALUE_KEYWORDS), json_values),
        )
        return st.lists(entry, max_size=5).map(dict)

    return st.recursive(st.booleans() | st.just({}) | st.just({"type": "string"}), extend, max_leaves=12)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_the_single_document_check_agrees_with_jsonschema(schema):
    assert single_document_validator().is_valid(schema) == FULL.is_valid(schema)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schemas())
def test_what_jsonschema_rs_calls_valid_is_valid(schema):
    if _plainly_valid(schema):
        assert FULL.is_valid(schema)


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?<name>x)"}}},  # not Python's syntax
    {"type": "object", "patternProperties": {"(": {}}},
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": float("nan")}}},
    {"type": "object", "properties": {"when": {"default": __import__("datetime").date(2026, 1, 1)}}},
    {"type": "object", "properties": {"tags": {"enum": [{"a", "b"}]}}},  # a set: not JSON
])
def test_jsonschema_rs_leaves_what_it_does_not_check_to_jsonschema(schema):
    assert not _plainly_valid(schema)


def test_jsonschema_rs_answers_for_a_plain_tool_schema():
    tool = {"type": "object", "properties": {"id": {"type": "string", "description": "The case"},
                                             "limit": {"type": "integer", "minimum": 1}}, "required": ["id"]}
    assert _plainly_valid(tool)
    assert not _plainly_valid({**tool, "required": "id"})


def test_generated_schemas_include_valid_and_invalid_ones():
    """The strategy above reaches both verdicts (a check of the test itself)."""
    seen: set[bool] = set()

    @settings(max_examples=200, deadline=None)
    @given(schemas())
    def verdicts(schema):
        seen.add(FULL.is_valid(schema))

    verdicts()
    assert seen == {True, False}


@pytest.mark.parametrize("schema", [
    {"type": "strng"}, {"$id": 5}, {"$schema": 3}, {"items": [{}]}, {"pattern": "("}, {"required": "id"},
    {"properties": {"$id": {"type": "strng"}}}, {"$defs": {"a": {"minimum": "1"}}}, {"minLength": -1},
])
def test_an_invalid_schema_gets_jsonschemas_own_message(schema):
    with pytest.raises(SchemaError) as raised:
        Draft202012Validator.check_schema(schema)
    assert schema_problem(schema) == raised.value.message


def test_a_schema_of_another_draft_is_checked_against_its_own_metaschema():
    draft_7 = {"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}]}
    assert schema_problem(draft_7) is None
    assert schema_problem({k: v for k, v in draft_7.items() if k != "$schema"}) is not None


def test_every_tool_schema_of_the_release_gets_the_same_verdict(occubench, monkeypatch):
    checked: list[object] = []

    def recording(schema):
        checked.append(schema)
        return schema_problem(schema)

    monkeypatch.setattr(_occubench, "schema_problem", recording)
    _occubench._schema_problem.cache_clear()
    try:
        load_catalog([f"occubench:{occubench.root}"], bundled=False)
    finally:
        _occubench._schema_problem.cache_clear()

    assert checked
    for schema in checked:
        assert single_document_validator().is_valid(schema) == FULL.is_valid(schema), schema
        assert _plainly_valid(schema) <= FULL.is_valid(schema), schema


def test_a_tool_schema_whose_dollar_schema_is_not_a_string_is_replaced_not_fatal():
    # jsonschema's own draft lookup fails on a non-string `$schema` with an AttributeError.
    schema, why = _occubench._input_schema({"type": "object", "$schema": 3, "properties": {}})
    assert schema == {"type": "object"}
    assert why == "was not valid JSON Schema (3 is not of type 'string')"
