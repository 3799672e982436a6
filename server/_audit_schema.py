"""Which fields a tool's output schema declares at each place of an observation."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jsonpointer

from ._audit_index import pointer

_BRANCHES = ("anyOf", "oneOf", "allOf")


def undeclared_fields(schema: dict[str, Any] | None, observation: Any) -> Iterator[tuple[str, str]]:
    """(pointer, key) for every object key that no schema branch at its place declares.

    Places where some branch leaves the object open (no `properties`) declare every key.
    """
    if schema is None:
        return
    yield from _walk([schema], observation, "", schema, 0)


def declared_names(schema: dict[str, Any] | None) -> frozenset[str]:
    """Every property name the schema declares anywhere."""
    key = id(schema)
    cached = _NAMES.get(key)
    if cached is not None and cached[0] is schema:
        return cached[1]
    names: set[str] = set()
    pending: list[Any] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            properties = node.get("properties")
            if isinstance(properties, dict):
                names.update(properties)
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)
    found = frozenset(names)
    if schema is not None:
        _NAMES[key] = (schema, found)
    return found


# Keyed by id() with the schema kept alive beside it, so an id is never reused while cached.
_NAMES: dict[int, tuple[Any, frozenset[str]]] = {}


def _walk(schemas: list[dict[str, Any]], value: Any, path: str, root: dict[str, Any],
          depth: int) -> Iterator[tuple[str, str]]:
    if depth > 32:
        return
    nodes = _expand(schemas, root)
    if isinstance(value, dict):
        objects = [n for n in nodes if n.get("type") in (None, "object") or
                   (isinstance(n.get("type"), list) and "object" in n["type"])]
        if not objects:
            return
        declared: set[str] = set()
        patterns: list[str] = []
        open_object = False
        for node in objects:
            properties = node.get("properties")
            if not isinstance(properties, dict):
                open_object = True
                break
            declared.update(properties)
            patterns.extend(node.get("patternProperties", {}) or {})
            extra = node.get("additionalProperties")
            if isinstance(extra, dict) and extra:
                open_object = True
        for key, child in value.items():
            if not open_object and key not in declared and not any(_search(p, key) for p in patterns):
                yield path, key
                continue
            children = [n["properties"][key] for n in objects
                        if isinstance(n.get("properties"), dict) and isinstance(n["properties"].get(key), dict)]
            children += [n["additionalProperties"] for n in objects
                         if key not in (n.get("properties") or {}) and isinstance(n.get("additionalProperties"), dict)]
            if children:
                yield from _walk(children, child, pointer(path, key), root, depth + 1)
    elif isinstance(value, list):
        items = [n["items"] for n in nodes if isinstance(n.get("items"), dict)]
        if items:
            for position, item in enumerate(value):
                yield from _walk(items, item, pointer(path, position), root, depth + 1)


def _expand(schemas: list[dict[str, Any]], root: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas with their `$ref`s resolved and their anyOf/oneOf/allOf branches listed instead."""
    out: list[dict[str, Any]] = []
    pending = list(schemas)
    while pending and len(out) < 64:
        node = pending.pop(0)
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = _resolve(root, ref)
            if target is not None:
                pending.append(target)
            continue
        branches = [b for key in _BRANCHES for b in node.get(key, []) or [] if isinstance(b, dict)]
        if branches:
            pending.extend(branches)
            rest = {k: v for k, v in node.items() if k not in _BRANCHES}
            if "properties" in rest:
                out.append(rest)
        else:
            out.append(node)
    return out


def _resolve(root: dict[str, Any], ref: str) -> dict[str, Any] | None:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref[1:].split("/")[1:]:
        part = jsonpointer.unescape(part)
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node if isinstance(node, dict) else None


def _search(pattern: str, key: Any) -> bool:
    try:
        return re.search(pattern, str(key)) is not None
    except re.error:
        return True
