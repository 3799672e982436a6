"""Schemas in the form every client takes: no `type` arrays.

JSON Schema allows `"type": ["string", "null"]`, but function-declaration formats built on the OpenAPI 3.0
subset (Gemini's among them) accept only one type per schema. The same meaning written as `anyOf`, one
branch per type, is accepted everywhere, so every schema the server advertises is rewritten that way.
"""

from __future__ import annotations

from typing import Any

import jsonpointer

# Keywords that describe the value as a whole: they stay beside the `anyOf` instead of going into a branch.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
                          "writeOnly", "$id", "$anchor", "$schema"})
# Where a keyword's value is itself a schema, a list of schemas or a map of them.
_SCHEMA_VALUES = frozenset({"items", "additionalProperties", "additionalItems", "contains", "not", "if", "then",
                            "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})


def portable_schema(schema: Any) -> Any:
    """`schema` with every `type` array, at every depth, written as an `anyOf` of single-type branches.

    Each branch keeps the keywords that constrain values (they only ever apply to their own type, so the
    meaning is unchanged); annotations stay at the top. A one-element array becomes a plain `type`.
    The input is not modified.
    """
    if isinstance(schema, list):
        return [portable_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _SCHEMA_VALUES:
            out[key] = portable_schema(value)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [portable_schema(item) for item in value]
        elif key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: portable_schema(sub) for name, sub in value.items()}
        else:
            out[key] = value
    kinds = out.get("type")
    if not isinstance(kinds, list):
        return out
    unique = list(dict.fromkeys(kinds))
    if len(unique) == 1:
        return {**out, "type": unique[0]}
    annotations = {key: value for key, value in out.items() if key in _ANNOTATIONS}
    constraints = {key: value for key, value in out.items() if key not in _ANNOTATIONS and key != "type"}
    branches = [{"type": kind, **constraints} for kind in unique]
    return {**annotations, "anyOf": branches}


def type_arrays(schema: Any, where: str = "") -> list[str]:
    """JSON Pointers of every `type` array in `schema` (what `portable_schema` removes)."""
    found: list[str] = []
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            found += type_arrays(item, f"{where}/{index}")
    elif isinstance(schema, dict):
        if isinstance(schema.get("type"), list):
            found.append(f"{where}/type")
        for key, value in schema.items():
            if isinstance(value, (dict, list)) and key not in ("enum", "const", "default", "examples"):
                found += type_arrays(value, f"{where}/{jsonpointer.escape(key)}")
    return found
