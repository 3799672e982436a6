"""What a fault does to one call: explicit error envelopes (E1) and degraded observations (E2)."""

from __future__ import annotations

import copy
import random
from typing import Any

from occusim.environments import InjectedFault

from ._faults import IMPLICIT_LABELS

_ENVELOPES: dict[str, tuple[dict[str, Any], str]] = {
    "http_500": (
        {"type": "http_error", "status": 500},
        "500 Internal Server Error: the {tool} service failed while processing the request.",
    ),
    "timeout": (
        {"type": "timeout", "status": 504},
        "The {tool} request timed out after 30 seconds without a response.",
    ),
    "connection_refused": (
        {"type": "connection_error"},
        "Connection refused: the {tool} backend is not accepting connections.",
    ),
    "service_unavailable": (
        {"type": "http_error", "status": 503},
        "503 Service Unavailable: {tool} is temporarily unavailable; retry later.",
    ),
}


def explicit_error(label: str, tool: str) -> tuple[dict[str, Any], InjectedFault]:
    """The error envelope the agent sees instead of calling the model (no state change)."""
    fields, message = _ENVELOPES[label]
    text = message.format(tool=tool)
    return {"error": {**fields, "message": text}}, InjectedFault(kind="explicit", label=label, detail=text)


def degrade(observation: Any, label: str, *, output_schema: dict[str, Any] | None, previous: Any,
            rng: random.Random) -> tuple[Any, InjectedFault] | None:
    """Degrade a true observation, trying `label` first and the other implicit labels after it.

    Returns the shown observation and its record, or None when no degradation applies (e.g. an empty
    object with no earlier answer of the same tool); the call is then clean.
    """
    order = [label] + [other for other in IMPLICIT_LABELS if other != label]
    for name in order:
        result = _DEGRADERS[name](observation, output_schema, previous, rng)
        if result is not None:
            shown, detail = result
            return shown, InjectedFault(kind="implicit", label=name, detail=detail)
    return None


def _truncate_list(observation: Any, _schema: Any, _previous: Any, rng: random.Random) -> tuple[Any, str] | None:
    lists = [(path, value) for path, value in _walk(observation, "") if isinstance(value, list) and len(value) >= 2]
    if not lists:
        return None
    # The longest list is the one whose loss matters; ties go to the first found (outermost).
    path, items = max(lists, key=lambda pair: len(pair[1]))
    keep = min(rng.choice((1, 2)), len(items) - 1)
    shown = copy.deepcopy(observation)
    _set(shown, path, copy.deepcopy(items[:keep]))
    return shown, f"{path or '/'}: {len(items)} -> {keep} items"


def _drop_fields(observation: Any, schema: Any, _previous: Any, rng: random.Random) -> tuple[Any, str] | None:
    candidates = _optional_fields(observation, schema)
    if not candidates:
        return None
    chosen = sorted(rng.sample(candidates, min(2, len(candidates))))
    shown = copy.deepcopy(observation)
    dropped = []
    for path in chosen:
        parent, key = _split(path)
        holder = _get(shown, parent)
        if isinstance(holder, dict) and key in holder:
            del holder[key]
            dropped.append(path)
    return shown, "dropped " + ", ".join(dropped)


def _null_fields(observation: Any, schema: Any, _previous: Any, rng: random.Random) -> tuple[Any, str] | None:
    candidates = [
        path for path in _optional_fields(observation, schema)
        if _get(observation, path) is not None and not isinstance(_get(observation, path), dict | list)
    ]
    if not candidates:
        return None
    chosen = sorted(rng.sample(candidates, min(2, len(candidates))))
    shown = copy.deepcopy(observation)
    for path in chosen:
        _set(shown, path, None)
    return shown, "nulled " + ", ".join(chosen)


def _stale(observation: Any, _schema: Any, previous: Any, _rng: random.Random) -> tuple[Any, str] | None:
    if previous is None or previous == observation:
        return None
    return copy.deepcopy(previous), "repeated the previous answer of this tool"


_DEGRADERS = {
    "truncate_list": _truncate_list,
    "drop_fields": _drop_fields,
    "null_fields": _null_fields,
    "stale": _stale,
}


def _optional_fields(observation: Any, schema: Any) -> list[str]:
    """JSON Pointers of object fields the output schema does not require.

    Without a schema every field is optional except identifiers and error messages, which the agent
    needs to make sense of the answer at all. The top level always keeps at least one field.
    """
    out: list[str] = []

    def visit(value: Any, sub: Any, path: str) -> None:
        if isinstance(value, dict):
            properties = sub.get("properties", {}) if isinstance(sub, dict) else {}
            if isinstance(sub, dict) and "required" in sub:
                required = set(sub["required"])
            elif isinstance(sub, dict) and properties:
                required = set()
            else:
                required = {k for k in value if k == "id" or k.endswith("_id") or k == "error"}
            for key, child in value.items():
                child_path = f"{path}/{_escape(key)}"
                if key not in required:
                    out.append(child_path)
                visit(child, properties.get(key), child_path)
        elif isinstance(value, list):
            items = sub.get("items") if isinstance(sub, dict) else None
            for index, child in enumerate(value[:3]):
                visit(child, items, f"{path}/{index}")

    visit(observation, schema, "")
    top_level = [p for p in out if p.count("/") == 1]
    if isinstance(observation, dict) and observation and len(top_level) == len(observation):
        out.remove(top_level[0])
    return out


def _walk(value: Any, path: str):
    yield path, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _walk(child, f"{path}/{_escape(key)}")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _walk(child, f"{path}/{index}")


def _escape(key: str) -> str:
    return str(key).replace("~", "~0").replace("/", "~1")


def _parts(path: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]] if path else []


def _split(path: str) -> tuple[str, str]:
    parent, _, key = path.rpartition("/")
    return parent, key.replace("~1", "/").replace("~0", "~")


def _get(document: Any, path: str) -> Any:
    for part in _parts(path):
        document = document[int(part)] if isinstance(document, list) else document.get(part)
    return document


def _set(document: Any, path: str, value: Any) -> None:
    parent, key = _split(path)
    holder = _get(document, parent)
    if isinstance(holder, list):
        holder[int(key)] = value
    else:
        holder[key] = value
