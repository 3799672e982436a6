"""Tolerant extraction of the first JSON value from model text (fences, leading prose)."""

from __future__ import annotations

import json
import re
from typing import Any

from ._errors import LLMOutputError

_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def parse_json_output(text: str) -> Any:
    """Return the first JSON object (or array) in `text`; raise LLMOutputError when there is none."""
    stripped = text.strip()
    try:
        return json.loads(stripped)
    except (json.JSONDecodeError, ValueError):
        pass
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        found = _first_json_value(decoder, candidate)
        if found is not _MISSING:
            return found
    raise LLMOutputError("expected a JSON object in the model output, found none", text)


_MISSING = object()


def _first_json_value(decoder: json.JSONDecoder, text: str) -> Any:
    # Objects first: prose like "[note] {...}" should yield the object the caller asked for.
    for opener in ("{", "["):
        start = text.find(opener)
        while start != -1:
            try:
                value, _ = decoder.raw_decode(text, start)
                return value
            except json.JSONDecodeError:
                start = text.find(opener, start + 1)
    return _MISSING
