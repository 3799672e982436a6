"""Whether a schema is valid JSON Schema: the check that loading OccuBench's tools spends most of its time in.

Three checks, cheapest first; only the last one's "invalid" stands.
1. jsonschema-rs checks the schema against the 2020-12 metaschema in microseconds. Its "valid" is taken
   only for a schema without the keywords that jsonschema also checks by format (`pattern` as a Python
   regular expression, `$id`, `$ref` or `$schema` as URIs where a URI checker is installed), which
   jsonschema-rs leaves unchecked.
2. The metaschema folded into one document, checked by jsonschema (below).
3. jsonschema's own `check_schema`, whose verdict and message stand for a schema the others reject.

JSON Schema 2020-12's metaschema is eight documents (the root and its seven vocabularies) joined by `allOf`,
whose subschemas refer back to the root through `$dynamicRef: "#meta"`; resolving that dynamic reference at
every subschema is most of what `check_schema` costs (0.5 ms for a typical tool). Without an extending
metaschema, every such reference lands on the root, so the same checks fit in one document: the vocabularies
inlined, `$dynamicRef: "#meta"` as `$ref: "#"`, their `$defs` gathered at the root. That document is derived
here, once, from the metaschema jsonschema ships (nothing is written by hand), and checks 2.6 times faster.

tests/environments/test_metaschema_check.py checks the first two checks' verdicts against `check_schema`'s on
generated schemas.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema_rs
from jsonschema import Draft202012Validator, SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

ROOT = "https://json-schema.org/draft/2020-12/schema"
# In a schema's JSON, the start of a keyword (or name) that jsonschema's format checks may look at.
_FORMAT_CHECKED = ('"pattern', '"$')
# A vocabulary's reference to a definition of its own or of another vocabulary: `meta/core#/$defs/...`.
_VOCABULARY_REFERENCE = re.compile(r"^meta/[\w-]+#")
# What only a separate document needs: its identity, dialect and vocabulary declarations.
_DOCUMENT_KEYWORDS = frozenset({"$schema", "$id", "$vocabulary", "$dynamicAnchor"})
# The keywords whose values are subschemas: by name, in a list, or one.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMAS = frozenset({"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
                      "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"})


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is not valid JSON Schema (its own `$schema`'s draft, 2020-12 by default), or None."""
    declared = schema.get("$schema") if isinstance(schema, dict) else None
    # jsonschema looks a `$schema` up as a URI, and fails on anything but a string.
    validator = (validator_for(schema, default=Draft202012Validator) if isinstance(declared, str)
                 else Draft202012Validator)
    if validator is Draft202012Validator and (
        _plainly_valid(schema) or next(single_document_validator().iter_errors(schema), None) is None
    ):
        return None
    try:
        validator.check_schema(schema)
    except SchemaError as error:
        return str(error.message)
    return None


def _plainly_valid(schema: Any) -> bool:
    """Valid by jsonschema-rs, for a JSON schema with nothing that jsonschema checks by format (see above)."""
    try:
        text = json.dumps(schema, allow_nan=False)
        return not any(marker in text for marker in _FORMAT_CHECKED) and bool(jsonschema_rs.meta.is_valid(schema))
    except (TypeError, ValueError, RecursionError):  # not JSON (a date, a set, a non-string key): left to jsonschema
        return False


@functools.cache
def single_document_validator() -> Validator:
    """A validator of schemas against the 2020-12 metaschema folded into one document."""
    return Draft202012Validator(single_document_metaschema(), format_checker=Draft202012Validator.FORMAT_CHECKER)


def single_document_metaschema() -> dict[str, Any]:
    """The 2020-12 metaschema and its vocabularies as one document (see the module's docstring)."""
    from jsonschema_specifications import REGISTRY

    root = REGISTRY.contents(ROOT)
    if not isinstance(root, dict):
        raise TypeError(f"the metaschema {ROOT} is not an object")
    base = ROOT.rpartition("/")[0]
    definitions: dict[str, Any] = {}
    parts = []
    for part in root.get("allOf", []):
        vocabulary = dict(REGISTRY.contents(f"{base}/{part['$ref']}"))
        for name, definition in vocabulary.pop("$defs", {}).items():
            if definitions.setdefault(name, definition) != definition:
                raise ValueError(f"two vocabularies of {ROOT} define {name!r} differently")
        parts.append(_folded(vocabulary))
    document = _folded({key: value for key, value in root.items() if key not in ("allOf", "$defs")})
    document["allOf"] = parts
    document["$defs"] = {name: _folded(definition) for name, definition in {**root.get("$defs", {}),
                                                                           **definitions}.items()}
    return document


def _folded(schema: Any) -> Any:
    """`schema` (a part of the metaschema) with its dynamic references to the metaschema made plain ones to the
    root, references into the vocabularies made ones into the root's `$defs`, and document keywords dropped;
    the names that `properties` and its kind map to subschemas (`$id` among them) are kept as they are."""
    if not isinstance(schema, dict):
        return schema
    folded: dict[str, Any] = {}
    for keyword, value in schema.items():
        if keyword == "$dynamicRef" and value == "#meta":
            folded["$ref"] = "#"
        elif keyword == "$ref" and isinstance(value, str):
            folded["$ref"] = _VOCABULARY_REFERENCE.sub("#", value)
        elif keyword in _DOCUMENT_KEYWORDS:
            continue
        elif keyword in _SCHEMA_MAPS and isinstance(value, dict):
            folded[keyword] = {name: _folded(subschema) for name, subschema in value.items()}
        elif keyword in _SCHEMA_LISTS and isinstance(value, list):
            folded[keyword] = [_folded(subschema) for subschema in value]
        elif keyword in _SCHEMAS:
            folded[keyword] = _folded(value)
        else:
            folded[keyword] = value  # data: enum values, defaults, titles
    return folded
