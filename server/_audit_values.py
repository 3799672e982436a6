"""When an observed value says the same as the state's: JSON equality with json_equal's number tolerance, free
text up to whitespace, and date-times as instants (2025-08-06T10:30 and 2025-08-06T10:30:00)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from occusim.judge import json_equal

_SPACE = re.compile(r"\s+")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")


def same_value(observed: Any, held: Any) -> bool:
    if json_equal(observed, held):
        return True
    if not (isinstance(observed, str) and isinstance(held, str)):
        return False
    if _SPACE.sub(" ", observed).strip() == _SPACE.sub(" ", held).strip():
        return True
    if _DATE_TIME.match(observed) and _DATE_TIME.match(held):
        left, right = instant(observed), instant(held)
        return left is not None and left == right
    return False


def instant(text: str) -> datetime | None:
    """The moment an ISO-8601 date-time names; one without an offset is read as UTC, as the state's are."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("z", "Z"))
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment
