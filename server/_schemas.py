"""Compiled JSON Schema validators, shared by every episode, and violations as (JSON path, message) pairs."""

from __future__ import annotations

from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from occusim.environments import format_location

# Keyed by id() with the schema kept alive beside it, so an id is never reused while cached.
_CACHE: dict[int, tuple[dict[str, Any], Draft202012Validator]] = {}
_MAX_MESSAGE = 200


def validator_for(schema: dict[str, Any]) -> Draft202012Validator:
    entry = _CACHE.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER))
        _CACHE[id(schema)] = entry
    return entry[1]


def violations(schema: dict[str, Any], instance: Any) -> list[tuple[str, str]]:
    """Every way `instance` breaks `schema`, ordered by path, as (`items[0].quantity`, message) pairs."""
    errors = sorted(validator_for(schema).iter_errors(instance), key=_order)
    return [(format_location(e.absolute_path), _short(e.message)) for e in errors]


def _order(error: ValidationError) -> tuple[str, str]:
    return (format_location(error.absolute_path), error.message)


def _short(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
