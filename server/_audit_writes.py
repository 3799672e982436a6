"""The audit's checks of what a call did to the state: an error the state contradicts, a write reported done
with no patch, a patch on a record other than the one the call names, a created record reported otherwise."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from occusim.environments import FlagKind, StepFlag, Tool, ToolErrorType, read_tool_error

from ._audit_identity import Entities
from ._audit_index import is_scalar, pointer, walk_objects
from ._audit_values import same_value

_NOT_FOUND = re.compile(r"not[ _-]?found|no such|does not exist|doesn't exist|unknown|no record|not exist",
                        re.IGNORECASE)
_TRANSPORT = frozenset({ToolErrorType.HTTP_ERROR, ToolErrorType.TIMEOUT, ToolErrorType.CONNECTION_ERROR,
                        ToolErrorType.SIMULATOR_ERROR, ToolErrorType.SIMULATOR_UNAVAILABLE})
_NUMBERED = re.compile(r"[A-Za-z0-9][\w.-]*\d[\w.-]*")
_SUCCESS_STATUS = frozenset({"success", "succeeded", "ok", "completed", "done"})
_CREATING_OPS = ("add", "copy", "move")


def error_flags(observation: dict[str, Any], arguments: dict[str, Any], before: Entities) -> list[StepFlag]:
    """An error observation the state before the call contradicts: a record the call names reported as not
    found although it exists, or an error that reports success beside it."""
    flags = []
    if observation.get("success") is True or str(observation.get("status", "")).lower() in _SUCCESS_STATUS:
        flags.append(StepFlag(kind=FlagKind.error_contradiction, path="/error",
                              detail="the observation reports an error and a success at once"))
    error = read_tool_error(observation)
    if error is None or error.type in _TRANSPORT or \
            not (_NOT_FOUND.search(str(error.type)) or _NOT_FOUND.search(error.message)):
        return flags  # a failed transport (an injected 404 among them) says nothing about the records
    values = [v for v in argument_values(arguments) if isinstance(v, str) and v.strip()]
    if any(not before.named(token.strip(".")) for token in _NUMBERED.findall(error.message)):
        return flags  # the message names something the state does not hold: it may be what is missing
    quoted = [v for v in values if v in error.message]
    candidates = quoted or [v for v in values if before.named(v)]
    existing = [v for v in candidates if before.named(v)]
    if candidates and len(existing) == len(candidates):
        record = before.named(existing[0])[0]
        flags.append(StepFlag(kind=FlagKind.error_contradiction, path="/error",
                              detail=f"the observation reports {existing[0]!r} as not found, yet the state holds "
                              f"it at {record.path}"))
    return flags


def write_flags(tool: Tool, arguments: dict[str, Any], observation: dict[str, Any],
                patch: Sequence[dict[str, Any]], before: Entities) -> list[StepFlag]:
    """A successful call of a writing tool that leaves the state as it was, and a patch that changes a record
    of a collection the call names a record of, but not the named one."""
    if not patch:
        if tool.read_only is False and tool.writes and _reports_change(observation):
            return [StepFlag(kind=FlagKind.unrecorded_write, path=None,
                             detail=f"{tool.name} reports a change, yet its patch changes nothing")]
        return []
    named: dict[str, set[str]] = {}
    for record in before.mentioned(argument_values(arguments)):
        named.setdefault(record.collection.path, set()).add(record.path)
    if not named:
        return []
    touched: dict[str, list[tuple[str, str]]] = {}
    for op in patch:
        for key in ("path", "from") if op.get("op") == "move" else ("path",):
            target = op.get(key)
            changed = before.containing(target) if isinstance(target, str) else None
            if changed is not None:
                touched.setdefault(changed.collection.path, []).append((changed.path, str(target)))
    flags = []
    for collection, changes in touched.items():
        wanted = named.get(collection)
        if wanted and not any(path in wanted for path, _ in changes):
            path, target = changes[0]
            flags.append(StepFlag(kind=FlagKind.wrong_record, path=target,
                                  detail=f"the call names {', '.join(sorted(wanted))}, yet the patch changes "
                                  f"{path} instead"))
    return flags


def _reports_change(observation: dict[str, Any]) -> bool:
    """Whether an observation claims to have done something: it carries more than a bare status line."""
    return bool(observation) and not all(value in (None, False, "", [], {}) for value in observation.values())


def added_record_flags(observation: dict[str, Any], patch: Sequence[dict[str, Any]]) -> list[StepFlag]:
    """Fields of an observed object that reports a record the patch adds (sharing two or more of its fields,
    most of those it has in common) yet says otherwise about the rest."""
    added = [(str(op.get("path")), op["value"]) for op in patch
             if op.get("op") in _CREATING_OPS and isinstance(op.get("value"), dict)]
    if not added:
        return []
    flags = []
    for path, item in walk_objects(observation):
        for where, record in _added_records(added):
            common, equal = _agreement(item, record)
            if len(equal) < 2 or 2 * len(equal) < len(common):
                continue
            for key in common:
                if key not in equal:
                    flags.append(StepFlag(kind=FlagKind.patch_contradiction, path=pointer(path, key),
                                          detail=f"the observation says {key}={item[key]!r}, the patch adds "
                                          f"{where} with {key}={record[key]!r}"))
            break
    return flags


def added_values(item: dict[str, Any], patch: Sequence[dict[str, Any]]) -> dict[str, list[Any]]:
    """Field -> values of the records the patch adds that an observed object reports (two or more of their
    fields, most of those they share): a created record names its parent, yet reports its own fields."""
    found: dict[str, list[Any]] = {}
    for op in patch:
        if op.get("op") in _CREATING_OPS and isinstance(op.get("value"), dict):
            for _, record in walk_objects(op["value"]):
                common, equal = _agreement(item, record)
                if len(equal) >= 2 and 2 * len(equal) >= len(common):
                    for key, value in record.items():
                        found.setdefault(key, []).append(value)
    return found


def _agreement(item: dict[str, Any], record: dict[str, Any]) -> tuple[list[str], list[str]]:
    common = [k for k, v in item.items() if is_scalar(v) and k in record and is_scalar(record[k])]
    return common, [k for k in common if same_value(item[k], record[k])]


def _added_records(added: list[tuple[str, dict[str, Any]]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for path, value in added:
        for inner, record in walk_objects(value):
            yield path + inner, record


def argument_values(node: Any) -> Iterator[Any]:
    """Every scalar of the call's arguments."""
    if isinstance(node, dict):
        for value in node.values():
            yield from argument_values(value)
    elif isinstance(node, list):
        for value in node:
            yield from argument_values(value)
    elif node is not None:
        yield node
