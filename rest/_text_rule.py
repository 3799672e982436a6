"""States in the OpenAPI document the rule every JSON body is checked against: no NUL in any text or key.

`JsonBodyRoute` refuses such bodies (400) before a route sees them; the models cannot say so field by field
for values of any shape, so the document generated from them gets the rule here, applied to every schema.
"""

from __future__ import annotations

from typing import Any

from occusim.environments import TEXT_PATTERN

JSON_VALUE = "JsonValue"
_REF = f"#/components/schemas/{JSON_VALUE}"
# Keys that describe a schema without constraining it: a schema with nothing else accepts any JSON value.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"})
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SUBSCHEMA = ("items", "not", "contains", "if", "then", "else", "propertyNames", "unevaluatedProperties")


def json_value_schema() -> dict[str, Any]:
    """Any JSON value a body may carry: texts and keys without NUL, at any depth."""
    return {"anyOf": [
        {"type": "null"}, {"type": "boolean"}, {"type": "number"},
        {"type": "string", "pattern": TEXT_PATTERN},
        {"type": "array", "items": {"$ref": _REF}},
        {"type": "object", "propertyNames": {"pattern": TEXT_PATTERN}, "additionalProperties": {"$ref": _REF}},
    ], "title": JSON_VALUE, "description": "Any JSON value whose texts and keys hold no NUL."}


def state_text_rule(document: dict[str, Any]) -> dict[str, Any]:
    """`document` (an OpenAPI document) with the rule stated in every schema it holds; changed in place."""
    components = document.setdefault("components", {}).setdefault("schemas", {})
    for name, schema in list(components.items()):
        components[name] = _rule(schema)
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            for parameter in operation.get("parameters", []):
                if "schema" in parameter:
                    parameter["schema"] = _rule(parameter["schema"])
            bodies = [operation.get("requestBody", {}), *operation.get("responses", {}).values()]
            for body in bodies:
                for media in body.get("content", {}).values():
                    if "schema" in media:
                        media["schema"] = _rule(media["schema"])
    components[JSON_VALUE] = json_value_schema()
    return document


def _rule(schema: Any) -> Any:
    if schema is True:
        return {"$ref": _REF}
    if not isinstance(schema, dict):
        return schema
    if set(schema) <= _ANNOTATIONS:
        return {**schema, "$ref": _REF}
    for key in _SUBSCHEMA_LISTS:
        if key in schema:
            schema[key] = [_rule(part) for part in schema[key]]
    for key in _SUBSCHEMA:
        if key in schema:
            schema[key] = _rule(schema[key])
    for key in ("properties", "patternProperties", "$defs"):
        if key in schema:
            schema[key] = {name: _rule(part) for name, part in schema[key].items()}
    if schema.get("type") == "string" and not {"pattern", "format", "enum", "const"} & set(schema):
        schema["pattern"] = TEXT_PATTERN
    if schema.get("type") == "object" or "properties" in schema or "additionalProperties" in schema:
        schema.setdefault("propertyNames", {"pattern": TEXT_PATTERN})
        if "additionalProperties" in schema:
            schema["additionalProperties"] = _rule(schema["additionalProperties"])
    return schema
