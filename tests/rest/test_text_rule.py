"""Both services' documents state the rule every JSON body is checked against: no NUL in a text or a key."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from occusim.environments import TEXT_PATTERN, json_problems
from occusim.judge import judge_app
from occusim.rest import rest_app
from occusim.rest._text_rule import JSON_VALUE, json_value_schema, state_text_rule
from occusim.service import create_app, load_settings

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=6) | st.sampled_from(["\x00", "a\x00b", ""])
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=12,
)


def _validator() -> Draft202012Validator:
    root = {"components": {"schemas": {JSON_VALUE: json_value_schema()}}, "$ref": f"#/components/schemas/{JSON_VALUE}"}
    return Draft202012Validator(root)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_json_value_schema_accepts_what_the_body_check_accepts(value: Any) -> None:
    assert _validator().is_valid(value) == (json_problems(value) == [])


def _documents(tmp_path) -> dict[str, dict[str, Any]]:
    settings_ = load_settings(overrides={"db": str(tmp_path / "hosted.db"), "api_keys": {"alice": "alice-key-0123456789"},
                                         "token_secret": "rule-token-secret-0123456789abcdef"}, environ={})
    return {"judge": judge_app().openapi(), "hosted": create_app(settings_).openapi()}


def _schemas(node: Any, where: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every schema object in a document or schema, with where it sits."""
    found: list[tuple[tuple[str, ...], dict[str, Any]]] = []
    if isinstance(node, dict):
        if "type" in node or "$ref" in node or "anyOf" in node or "oneOf" in node or not node:
            found.append((where, node))
        for key, child in node.items():
            if key not in {"enum", "const", "default", "examples", "required", "discriminator"}:
                found += _schemas(child, (*where, key))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found += _schemas(child, (*where, str(index)))
    return found


def test_every_text_key_and_free_value_of_both_documents_is_ruled(tmp_path) -> None:
    for name, document in _documents(tmp_path).items():
        schemas = _schemas(document["components"]["schemas"]) + _schemas(document["paths"])
        assert len(schemas) > 50, name
        texts_ = [where for where, schema in schemas if schema.get("type") == "string"
                  and not {"pattern", "format", "enum", "const"} & set(schema)]
        keys = [where for where, schema in schemas if schema.get("type") == "object" and "propertyNames" not in schema]
        # An empty object is a schema accepting anything, except as a media type without a schema (an SSE stream).
        free = [where for where, schema in schemas if not schema and where[-2:-1] != ("content",)
                and where[-1:] != ("properties",)]
        assert (texts_, keys, free) == ([], [], []), name
        assert document["components"]["schemas"][JSON_VALUE] == json_value_schema()


def test_the_rule_rewrites_each_kind_of_schema() -> None:
    document = {"paths": {"/x": {"post": {"requestBody": {"content": {"application/json": {"schema": {
        "type": "object", "properties": {"name": {"type": "string"}, "when": {"type": "string", "format": "date-time"},
                                         "anything": {"description": "free"}},
        "additionalProperties": True}}}}}}}}

    schema = state_text_rule(document)["paths"]["/x"]["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert schema["propertyNames"] == {"pattern": TEXT_PATTERN}
    assert schema["properties"]["name"]["pattern"] == TEXT_PATTERN
    assert "pattern" not in schema["properties"]["when"]
    assert schema["properties"]["anything"] == {"description": "free", "$ref": f"#/components/schemas/{JSON_VALUE}"}
    assert schema["additionalProperties"] == {"$ref": f"#/components/schemas/{JSON_VALUE}"}


def test_a_service_assembled_by_rest_app_gets_the_rule() -> None:
    app = rest_app(title="t", description="d", routers=[], max_body_bytes=1024, body_limit_setting="--limit")
    assert JSON_VALUE in app.openapi()["components"]["schemas"]
    assert app.openapi() is app.openapi()  # generated once


@pytest.mark.parametrize("text", ["plain", "naïve", "\U0001f600 emoji"])
def test_the_text_pattern_admits_text_without_nul(text: str) -> None:
    import re

    assert re.fullmatch(TEXT_PATTERN, text) and not re.fullmatch(TEXT_PATTERN, text + "\x00")
