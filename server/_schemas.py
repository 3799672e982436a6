"""Compiled JSON Schema validators, shared by every episode, and violations as (JSON path, message) pairs."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeVar

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing.exceptions import Unresolvable

from occusim.environments import format_location, local_validator

T = TypeVar("T")

_CACHE: dict[int, tuple[Any, Validator]] = {}
_MAX_MESSAGE = 200


def per_schema(cache: dict[int, tuple[Any, T]], schema: Any, build: Callable[[], T]) -> T:
    """`build()` for `schema`, made once per schema object and kept in `cache`.

    Keyed by id() with the schema kept alive beside it, so an id is never reused while cached.
    """
    entry = cache.get(id(schema))
    if entry is None or entry[0] is not schema:
        entry = (schema, build())
        cache[id(schema)] = entry
    return entry[1]


def validator_for(schema: dict[str, Any]) -> Validator:
    """A validator that never fetches a `$ref`: loading refuses references outside the scenario."""
    return per_schema(_CACHE, schema, lambda: local_validator(schema))


def violations(schema: dict[str, Any], instance: Any) -> list[tuple[str, str]]:
    """Every way `instance` breaks `schema`, ordered by path, as (`items[0].quantity`, message) pairs."""
    try:
        errors = sorted(validator_for(schema).iter_errors(instance), key=_order)
    except (Unresolvable, re.error) as error:
        # Loading refuses such schemas; one built in code without that check must not end the call.
        return [("", f"the schema cannot be applied ({error}); check the scenario with `occusim validate`")]
    return [(format_location(e.absolute_path), _short(e.message)) for e in errors]


def _order(error: ValidationError) -> tuple[str, str]:
    return (format_location(error.absolute_path), error.message)


def _short(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[: _MAX_MESSAGE - 3] + "..."
