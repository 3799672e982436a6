"""The output schema advertised to MCP clients: the declared one relaxed to admit error envelopes and the
results implicit faults (E2) produce."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from jsonschema.protocols import Validator

from occusim.environments import local_validator

from ._portable_schema import portable_schema
from ._schemas import per_schema

# An error envelope is any object with an `error` field. Its value (a message, or an object with a type or
# code and a message) is left unchecked: each subschema here is one more that clients check against the
# metaschema once a session, and a check of an error's shape helps no one.
ERROR_ENVELOPE_SCHEMA: dict[str, Any] = {
    "required": ["error"],
    "description": "An error: `error` says what went wrong, as a message or an object with a type or code and a "
                   "message.",
}


def advertised_output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario's output schema as advertised to clients: the declared result, relaxed, or an error.

    Clients validate structured results against the advertised schema (some even error results), so it
    admits what the episode really returns: error envelopes `{"error": ...}` (simulated tool errors,
    explicit faults, invalid arguments), and results degraded by implicit faults (E2), which drop or null
    optional fields and truncate lists. Without this the client library, not the
    agent, would reject such a result and turn an implicit fault into an explicit one. Nullable values are
    spelled as `anyOf` with a `null` branch, the most portable form, and so are the declared schema's own
    `type` arrays.
    """
    relaxed = _relaxed(portable_schema(dict(schema)), nullable=False)
    # Definitions stay at the document root, where their "#/$defs/..." references point.
    definitions = {key: relaxed.pop(key) for key in ("$defs", "definitions") if key in relaxed}
    return {"type": "object", "anyOf": [relaxed, ERROR_ENVELOPE_SCHEMA], **definitions}


_VALIDATORS: dict[int, tuple[Any, Validator]] = {}


def advertised_validator(schema: Mapping[str, Any]) -> Validator:
    """A validator of the advertised form of `schema`, built once per declared schema.

    It checks what the MCP client library checks: no format assertions, references within the document.
    """
    return per_schema(_VALIDATORS, schema, lambda: local_validator(advertised_output_schema(schema), formats=False))


# Where subschemas sit: fields that may be nulled (optional ones: `properties` the object does not require,
# and those `patternProperties` and `additionalProperties` describe), list items (cut, never nulled), and
# definitions or alternatives whose nullability is decided where they are used.
_NULLABLE_MAPS = ("patternProperties",)
_NULLABLE_VALUES = ("additionalProperties",)
_DEFINITION_MAPS = ("$defs", "definitions", "dependentSchemas")
_ALTERNATIVES = ("anyOf", "oneOf", "allOf")
# Bounds a degraded result may break: a truncated list loses items (and the ones `contains` asked for),
# dropped optional fields shrink an object.
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "deprecated"})
_DROPPED_BOUNDS = frozenset({"minItems", "contains", "minContains", "minProperties"})


def _relaxed(schema: Any, *, nullable: bool) -> Any:
    """A copy of `schema` without lower bounds on sizes, whose optional fields (when `nullable`, itself too)
    admit null, and whose `oneOf` is an `anyOf`: once fields are nulled or dropped, a result may fit more
    than one alternative."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    out: dict[str, Any] = {}
    one_of: list[Any] | None = None
    # Fields the same object requires are never nulled (a degradation nulls only optional ones), so they
    # stay as declared: every null branch is a subschema that clients check the schema for, once a session.
    listed_required = schema.get("required")
    required = set(listed_required) if isinstance(listed_required, list) else set()
    for key, value in schema.items():
        if key in _DROPPED_BOUNDS:
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: _relaxed(sub, nullable=name not in required) for name, sub in value.items()}
        elif key in _NULLABLE_MAPS + _DEFINITION_MAPS and isinstance(value, dict):
            out[key] = {name: _relaxed(sub, nullable=key in _NULLABLE_MAPS) for name, sub in value.items()}
        elif key in _NULLABLE_VALUES:
            out[key] = _relaxed(value, nullable=True)
        elif key == "items":
            out[key] = _relaxed(value, nullable=False)
        elif key == "prefixItems" and isinstance(value, list):
            out[key] = [_relaxed(sub, nullable=False) for sub in value]
        elif key in _ALTERNATIVES and isinstance(value, list):
            relaxed = [_relaxed(sub, nullable=False) for sub in value]
            if key == "oneOf":
                one_of = relaxed
            else:
                out[key] = relaxed
        else:
            out[key] = copy.deepcopy(value)
    if one_of is not None:
        if "anyOf" in out:
            out["allOf"] = [*out.get("allOf", []), {"anyOf": one_of}]
        else:
            out["anyOf"] = one_of
    # Type arrays are already `anyOf` branches here (portable_schema): a null branch beside nothing but
    # annotations is how a nullable value shows.
    listed = out.get("anyOf")
    branches: list[Any] = listed if isinstance(listed, list) else []
    null_branch = not (out.keys() - _ANNOTATIONS - {"anyOf"}) and any(
        isinstance(branch, dict) and branch.get("type") == "null" for branch in branches)
    admits_null = not out or out.get("type") == "null" or null_branch
    return out if not nullable or admits_null else {"anyOf": [out, {"type": "null"}]}
