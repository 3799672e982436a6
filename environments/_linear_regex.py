"""The `pattern`s of scenario schemas run on RE2, in time linear in the text, never by backtracking; and
the problems of a pattern that loading refuses: one RE2 cannot run, or one that a backtracking engine
(the `re` module an agent's MCP client checks results with) would take exponential time on."""

from __future__ import annotations

import functools
import re
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused pattern is reported as a problem, not written to stderr
_REPEATS = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)} - {None}


@functools.lru_cache(maxsize=4096)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern, _OPTIONS)


def search(pattern: str, text: str) -> bool:
    """Whether `pattern` matches anywhere in `text` (JSON Schema's unanchored `pattern`), in linear time.

    A pattern RE2 cannot run (loading refuses those) raises `re.error`, as the `re` module would.
    """
    try:
        compiled = _compiled(pattern)
    except re2.error as error:
        raise re.error(f"regular expression {pattern!r} cannot run in linear time: {error}") from None
    return compiled.search(text) is not None


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot be used in a scenario schema, or None."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as error:
        return f"invalid regular expression {pattern!r}: {error}"
    try:
        _compiled(pattern)
    except re2.error as error:
        reason = error.args[0].decode(errors="replace") if error.args and isinstance(error.args[0], bytes) else error
        return (f"regular expression {pattern!r} needs a feature the linear-time engine lacks ({reason}); "
                "rewrite it without backreferences, lookaround or repeats over 1000")
    nested = _backtracking_trap(parsed)
    if nested:
        return (f"regular expression {pattern!r} {nested}, which takes exponential time in backtracking engines "
                "(such as the `re` module of agents' MCP clients); rewrite it so that each repeat has one way to "
                "match, e.g. '^P*[0-9]+$' for '^(P|P?)+[0-9]+$'")
    return None


def _backtracking_trap(items: Any, repeated: bool = False) -> str | None:
    """What makes a parsed pattern backtrack exponentially (the usual shapes, not every one): a repeat of a
    group that is nothing but a repeat (`(a+)+`, `(\\w+\\s?)*`), or alternatives inside a repeat that can
    match the same text (one empty, or two starting alike: `(P|P?)+`)."""
    for op, value in items:
        if op in _REPEATS:
            body = value[2]
            unbounded = value[1] is sre_parse.MAXREPEAT or value[1] > 1
            if unbounded and _repeats_inside(body) and not _has_separator(body):
                return "repeats a group that itself repeats"
            found = _backtracking_trap(body, repeated or unbounded)
            if found:
                return found
        elif op is sre_parse.SUBPATTERN:
            found = _backtracking_trap(value[-1], repeated)
            if found:
                return found
        elif op is sre_parse.BRANCH:
            branches = value[1]
            if repeated and _overlapping(branches):
                return "repeats alternatives that can match the same text"
            for branch in branches:
                found = _backtracking_trap(branch, repeated)
                if found:
                    return found
    return None


def _repeats_inside(items: Any) -> bool:
    for op, value in items:
        if op in _REPEATS and (value[1] is sre_parse.MAXREPEAT or value[1] > 1):
            return True
        if op is sre_parse.SUBPATTERN and _repeats_inside(value[-1]):
            return True
        if op is sre_parse.BRANCH and any(_repeats_inside(branch) for branch in value[1]):
            return True
    return False


def _has_separator(items: Any) -> bool:
    """Whether one character must be matched outside any repeat (`([a-z]+\\.)*`): a repeat's passes are
    then told apart by it."""
    for op, value in items:
        if op in (sre_parse.LITERAL, sre_parse.NOT_LITERAL, sre_parse.IN, sre_parse.ANY):
            return True
        if op is sre_parse.SUBPATTERN and _has_separator(value[-1]):
            return True
    return False


def _overlapping(branches: list[Any]) -> bool:
    firsts: list[Any] = []
    for branch in branches:
        first = _first(branch)
        if first is None or first == "any" or first in firsts or ("any" in firsts):
            return True
        firsts.append(first)
    return False


def _first(branch: Any) -> Any:
    """The literal a branch starts with, "any" when it starts with a class or a group, None when it can be empty."""
    for op, value in branch:
        if op is sre_parse.AT:
            continue
        if op is sre_parse.LITERAL:
            return value
        if op in _REPEATS and value[0] == 0:
            return None
        return "any"
    return None
