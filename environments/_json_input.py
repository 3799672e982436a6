"""What JSON from outside must be before anything stores or sends it: bounded nesting, text that is valid
Unicode without NUL, finite numbers of bounded size. Episodes and the REST layer check with `json_problems`."""

from __future__ import annotations

import math
import re
from typing import Any

from ._errors import format_location
from ._occusim_error import OccusimError

MAX_JSON_DEPTH = 64
# Longer integers cannot be written as text by Python (its 4300-digit limit) and no scenario needs them.
MAX_INT_DIGITS = 100
_MAX_PROBLEMS = 5
_MAX_SHOWN_PATH = 80
# Lone surrogates cannot be encoded as UTF-8; PostgreSQL refuses NUL in text and JSON alike.
_BAD_TEXT = re.compile("[\ud800-\udfff\x00]")
# The part of that rule a JSON Schema can state (for every text and key of a body): no NUL. Lone surrogates
# cannot be excluded by a pattern, which JSON Schema reads as UTF-16 code units, without refusing every
# character outside the Basic Multilingual Plane too.
TEXT_PATTERN = "^[^\\x00]*$"


class JsonInputError(OccusimError, ValueError):
    """A value that cannot be accepted, with every problem as a (JSON path, message) pair."""

    def __init__(self, what: str, problems: list[tuple[str, str]]) -> None:
        self.what = what
        self.problems = problems
        shown = "; ".join(f"{path}: {message}" if path else message for path, message in problems)
        super().__init__(f"{what} cannot be accepted: {shown}")


def json_problems(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> list[tuple[str, str]]:
    """Why `value` (parsed JSON, or the Python value a caller passed) cannot be accepted; empty when it can.

    Each problem is a (`items[0].name`, message) pair; the first few are reported. The walk is iterative,
    so a value nested thousands of levels deep is refused, not a RecursionError.
    """
    problems: list[tuple[str, str]] = []
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while pending and len(problems) < _MAX_PROBLEMS:
        item, path = pending.pop()
        problem = _scalar_problem(item)
        if problem is not None:
            problems.append((format_location(path), problem))
            continue
        if not isinstance(item, dict | list):
            continue
        if len(path) >= max_depth:
            problems.append((_shown_path(path), f"nested deeper than the limit of {max_depth} levels"))
            continue
        if isinstance(item, list):
            pending.extend((child, (*path, index)) for index, child in reversed(list(enumerate(item))))
            continue
        for key, child in reversed(list(item.items())):
            if not isinstance(key, str):
                problems.append((format_location(path), f"object keys must be text, got {type(key).__name__}"))
                break
            key_problem = _text_problem(key)
            if key_problem is not None:
                problems.append((format_location((*path, _escaped(key))), f"the key {key_problem}"))
                break
            pending.append((child, (*path, key)))
    return sorted(problems)


def check_json(value: Any, what: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise JsonInputError naming `what` (e.g. "the arguments") when `value` cannot be accepted."""
    problems = json_problems(value, max_depth=max_depth)
    if problems:
        raise JsonInputError(what, problems)


def _scalar_problem(value: Any) -> str | None:
    if value is None or isinstance(value, bool | dict | list):
        return None
    if isinstance(value, str):
        return _text_problem(value)
    if isinstance(value, int):
        digits = len(str(abs(value))) if value.bit_length() < 4 * MAX_INT_DIGITS else MAX_INT_DIGITS + 1
        return None if digits <= MAX_INT_DIGITS else f"an integer of more than {MAX_INT_DIGITS} digits"
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number (numbers must be finite)"
    return f"a {type(value).__name__} is not a JSON value"


def _text_problem(text: str) -> str | None:
    found = _BAD_TEXT.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return f"contains a NUL character (U+0000) at position {found.start()}, which cannot be stored"
    return (f"contains an unpaired surrogate (U+{ord(found.group()):04X}) at position {found.start()}, "
            "which is not valid Unicode text")


def _shown_path(path: tuple[str | int, ...]) -> str:
    shown = format_location(path)
    return shown if len(shown) <= _MAX_SHOWN_PATH else shown[: _MAX_SHOWN_PATH - 3] + "..."


def _escaped(text: str) -> str:
    # A refused key is named in the error, which must itself be text that can be sent and stored.
    return _BAD_TEXT.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
