"""Bounds on a small model's constrained answer, and the token cap that a bounded answer always fits.

A small local model (the bundled 270M) decoding under a JSON-schema grammar does not stop on its own when a
string or a list may go on: it repeats until the token cap, and the cut-off answer is invalid. Bounding
every free string and list in the generation schema ends each of them, so the longest grammar-valid answer
has a size, and the cap is set from it instead of one number for every tool. Answers are still validated
against the schema as declared; the bounds only shape what the model may generate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# Compact JSON text per token: the bundled model's tokenizer gives 2.56 characters per token on the median
# golden answer of the catalog and 2.0 at the 5th percentile (1.65 at worst); the cap takes the 5th percentile.
_CHARS_PER_TOKEN = 2.0
# A value the schema does not describe (`{}` or an open object's extra member), in characters.
_FREE_VALUE_CHARS = 120
_NUMBER_CHARS = 12
# The name of an open object's member that the schema does not list, with its quotes and colon.
_MEMBER_NAME_CHARS = 24
_MAX_DEPTH = 12


@dataclass(frozen=True)
class AnswerBounds:
    """The generation limits and the cap's range.

    `max_string` characters per free string, `max_items` per list, `max_patch_operations` per state patch;
    the cap is the longest bounded answer's tokens plus `slack`, kept within [min_tokens, max_tokens].
    """

    max_string: int = 80
    max_items: int = 8
    max_patch_operations: int = 8
    slack: int = 48
    min_tokens: int = 192
    max_tokens: int = 1024


SMALL_MODEL_BOUNDS = AnswerBounds()
# Part of the cache key of local answers: raise it when the bounding changes, so old answers are not reused.
BOUNDING_REVISION = 4


def bounded_schema(schema: Any, bounds: AnswerBounds, *, patch_key: str = "state_patch") -> Any:
    """`schema` with a maxLength on every free string, a maxItems on every list and a maxProperties on every
    object that lists no members (the smaller of the declared limit and the bound); the state patch list
    gets `max_patch_operations`. Outside the patch, a value the schema leaves free (`{}`, or an open
    object's other members) may only be a scalar: a small model otherwise nests objects until the cap.
    Patch values stay free, since a patch adds whole records."""
    return _bound(schema, bounds, patch_key, 0, free_scalars=True)


def _free_scalar(bounds: AnswerBounds) -> dict[str, Any]:
    return {"anyOf": [{"type": "string", "maxLength": bounds.max_string}, {"type": "number"},
                      {"type": "boolean"}, {"type": "null"}]}


def _is_free(schema: Any) -> bool:
    """A schema that constrains nothing (`{}`, `true`, or only annotations)."""
    if schema is True:
        return True
    return isinstance(schema, dict) and not (schema.keys() - _ANNOTATIONS)


_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment"})


def _bound(schema: Any, bounds: AnswerBounds, patch_key: str, depth: int, *, free_scalars: bool) -> Any:
    if isinstance(schema, list):
        return [_bound(item, bounds, patch_key, depth, free_scalars=free_scalars) for item in schema]
    if free_scalars and _is_free(schema):
        return {**(schema if isinstance(schema, dict) else {}), **_free_scalar(bounds)}
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {
                name: _bound(sub, bounds, patch_key, depth + 1, free_scalars=free_scalars) if name != patch_key
                else _cap_items(_bound(sub, bounds, patch_key, depth + 1, free_scalars=False),
                                bounds.max_patch_operations)
                for name, sub in value.items()
            }
        elif key in ("$defs", "definitions") and isinstance(value, dict):
            # Definitions a `$ref` points to are bounded as the places that use them would be.
            out[key] = {name: _bound(sub, bounds, patch_key, depth + 1, free_scalars=free_scalars)
                        for name, sub in value.items()}
        elif key in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = _bound(value, bounds, patch_key, depth + 1, free_scalars=free_scalars)
        else:
            out[key] = value
    types = _types(out)
    if "string" in types and not {"enum", "const", "format"} & out.keys():
        out["maxLength"] = min(out.get("maxLength", bounds.max_string), bounds.max_string)
    if "array" in types:
        out = _cap_items(out, bounds.max_items)
    if "object" in types and "properties" not in out and out.get("additionalProperties") is not False:
        # An object that lists no members: bound how many it may have (and, outside the patch, what they are).
        declared = out.get("maxProperties")
        out["maxProperties"] = min(declared, bounds.max_items) if isinstance(declared, int) else bounds.max_items
        if free_scalars and "additionalProperties" not in out:
            out["additionalProperties"] = _free_scalar(bounds)
    return out


def _cap_items(schema: Any, limit: int) -> Any:
    if not isinstance(schema, dict):
        return schema
    declared = schema.get("maxItems")
    return {**schema, "maxItems": min(declared, limit) if isinstance(declared, int) else limit}


def _types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return {declared}
    if isinstance(declared, list):
        return {t for t in declared if isinstance(t, str)}
    return set()


def answer_token_cap(schema: Any, bounds: AnswerBounds) -> int:
    """The token cap for answers to a bounded `schema`: its longest answer in tokens, plus slack, clamped."""
    tokens = int(_longest(schema, bounds, 0) / _CHARS_PER_TOKEN) + bounds.slack
    return max(bounds.min_tokens, min(bounds.max_tokens, tokens))


def _longest(schema: Any, bounds: AnswerBounds, depth: int) -> float:
    """The characters of the longest compact JSON value `schema` admits (an estimate where it is open)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return _FREE_VALUE_CHARS
    if "const" in schema:
        return len(json.dumps(schema["const"], separators=(",", ":")))
    if "enum" in schema and isinstance(schema["enum"], list) and schema["enum"]:
        return max(len(json.dumps(v, separators=(",", ":"))) for v in schema["enum"])
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(alternatives, list) and alternatives:
        return max(_longest(a, bounds, depth + 1) for a in alternatives)
    types = _types(schema) or ({"object"} if "properties" in schema else set())
    if not types:
        return _FREE_VALUE_CHARS
    return max(_longest_of_type(t, schema, bounds, depth) for t in types)


def _longest_of_type(kind: str, schema: dict[str, Any], bounds: AnswerBounds, depth: int) -> float:
    if kind == "string":
        return min(schema.get("maxLength", bounds.max_string), bounds.max_string) + 2
    if kind in ("number", "integer"):
        return _NUMBER_CHARS
    if kind in ("boolean", "null"):
        return 5
    if kind == "array":
        items = min(schema.get("maxItems", bounds.max_items), bounds.max_items)
        return 2 + items * (_longest(schema.get("items", {}), bounds, depth + 1) + 1)
    declared = schema.get("properties")
    properties: dict[str, Any] = declared if isinstance(declared, dict) else {}
    size = 2.0 + sum((len(name) + 4 + _longest(sub, bounds, depth + 1) for name, sub in properties.items()), 0.0)
    extra = schema.get("additionalProperties")
    if extra is not False:
        members = min(schema.get("maxProperties", bounds.max_items), bounds.max_items)
        value = _longest(extra, bounds, depth + 1) if isinstance(extra, dict) else _FREE_VALUE_CHARS
        size += members * (_MEMBER_NAME_CHARS + value)
    return size
