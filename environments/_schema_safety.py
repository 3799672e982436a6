"""The JSON Schemas of a scenario stay inside it: validators that never retrieve a `$ref` and run `pattern`s
in linear time, and the problems (a `$ref` pointing elsewhere, a `pattern` that is no regular expression,
needs backtracking or would backtrack exponentially) that loading refuses."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import Any

import jsonpointer
from jsonschema import Draft202012Validator, ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend, validator_for
from referencing import Registry

from ._linear_regex import pattern_problem, search

# An empty registry with no `retrieve`: a reference outside the schema is never fetched, it is unresolvable.
_NO_RETRIEVAL: Registry[Any] = Registry()
_REF_KEYWORDS = ("$ref", "$dynamicRef")
_DATA_KEYWORDS = ("const", "enum", "default", "examples")


def local_validator(schema: Mapping[str, Any], *, formats: bool = True) -> Validator:
    """A validator for `schema` (its declared draft, else 2020-12) that resolves references only inside it;
    `formats` asserts `format` keywords."""
    cls = _linear(validator_for(schema, default=Draft202012Validator))
    return cls(schema, registry=_NO_RETRIEVAL, format_checker=cls.FORMAT_CHECKER if formats else None)


@functools.cache
def _linear(cls: Any) -> Any:
    """`cls` with the keywords that match regular expressions (`pattern`, `patternProperties` and the
    `additionalProperties` they shape) run on RE2 instead of the backtracking `re` module."""
    return extend(cls, {"pattern": _pattern, "patternProperties": _pattern_properties,
                        "additionalProperties": _additional_properties})


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    properties, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = [key for key in instance
              if key not in properties and not any(search(pattern, key) for pattern in patterns)]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(extra) for extra in sorted(extras))
        if patterns:
            yield ValidationError(f"{shown} {'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                                  f"{', '.join(repr(p) for p in sorted(patterns))}")
        else:
            yield ValidationError(f"Additional properties are not allowed ({shown} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


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
            problem = pattern_problem(node["pattern"])
            if problem:
                problems.append(([*path, "pattern"], problem))
        if isinstance(node.get("patternProperties"), dict):
            for key in node["patternProperties"]:
                problem = pattern_problem(key)
                if problem:
                    problems.append(([*path, "patternProperties", key], problem))
            if "unevaluatedProperties" in node:
                # The validator matches these keys with the backtracking engine, which loading cannot vouch for.
                problems.append(([*path, "unevaluatedProperties"], "unevaluatedProperties beside patternProperties "
                                 "is not supported; use additionalProperties"))
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

