"""The JSON Schemas of a scenario stay inside it: validators that never retrieve a `$ref`, and the problems
(a `$ref` pointing elsewhere, a `pattern` that is no regular expression) that loading refuses."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import jsonpointer
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry

# An empty registry with no `retrieve`: a reference outside the schema is never fetched, it is unresolvable.
_NO_RETRIEVAL: Registry[Any] = Registry()
_REF_KEYWORDS = ("$ref", "$dynamicRef")
_DATA_KEYWORDS = ("const", "enum", "default", "examples")


def local_validator(schema: Mapping[str, Any], *, formats: bool = True) -> Validator:
    """A validator for `schema` (its declared draft, else 2020-12) that resolves references only inside it;
    `formats` asserts `format` keywords."""
    cls = validator_for(schema, default=Draft202012Validator)
    return cls(schema, registry=_NO_RETRIEVAL, format_checker=cls.FORMAT_CHECKER if formats else None)


def schema_problems(schema: Any) -> list[tuple[list[str | int], str]]:
    """Each `$ref` that leaves `schema` or does not resolve in it, and each invalid regular expression,
    as (path inside `schema`, message)."""
    problems: list[tuple[list[str | int], str]] = []
    pending: list[tuple[Any, list[str | int]]] = [(schema, [])]
    while pending:
        node, path = pending.pop()
        if isinstance(node, list):
            pending.extend((child, [*path, index]) for index, child in enumerate(node))
            continue
        if not isinstance(node, dict):
            continue
        for keyword in _REF_KEYWORDS:
            if isinstance(node.get(keyword), str):
                problem = _ref_problem(schema, node[keyword])
                if problem:
                    problems.append(([*path, keyword], problem))
        if isinstance(node.get("pattern"), str):
            problem = _regex_problem(node["pattern"])
            if problem:
                problems.append(([*path, "pattern"], problem))
        if isinstance(node.get("patternProperties"), dict):
            for key in node["patternProperties"]:
                problem = _regex_problem(key)
                if problem:
                    problems.append(([*path, "patternProperties", key], problem))
        # Instances (const, enum, ...) are data, not schemas; a property may still be named like them.
        data = () if path and path[-1] in ("properties", "$defs", "definitions") else _DATA_KEYWORDS
        pending.extend((child, [*path, key]) for key, child in node.items() if key not in data)
    return sorted(problems, key=lambda problem: [str(part) for part in problem[0]])


def _ref_problem(root: Any, ref: str) -> str | None:
    if not ref.startswith("#"):
        return (f"$ref {ref!r} points outside the scenario; references must stay inside it "
                "(write '#/$defs/NAME' and define NAME under $defs)")
    fragment = ref[1:]
    if fragment and not fragment.startswith("/"):
        return None  # a plain-name anchor, resolved by the validator within the schema
    try:
        jsonpointer.resolve_pointer(root, fragment)
    except (jsonpointer.JsonPointerException, TypeError):
        return f"$ref {ref!r} does not resolve inside this schema"
    return None


def _regex_problem(pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as error:
        return f"invalid regular expression {pattern!r}: {error}"
    return None
