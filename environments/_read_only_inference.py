"""Whether an imported tool only reads, guessed from the verb its name (or else its description) starts with."""

from __future__ import annotations

import re

_READS = frozenset({
    "get", "list", "search", "fetch", "read", "view", "show", "find", "lookup", "query", "retrieve", "describe",
    "check", "verify", "inspect", "count", "preview", "browse", "returns", "retrieves", "lists", "reads",
    "shows", "gets", "looks", "searches", "fetches", "checks", "views", "finds", "queries", "describes",
})
_WRITES = frozenset({
    "set", "update", "create", "add", "delete", "remove", "submit", "assign", "execute", "apply", "finalize",
    "log", "configure", "advance", "request", "issue", "adjust", "record", "cancel", "reserve", "book", "send",
    "post", "reset", "modify", "write", "dispatch", "deploy", "move", "open", "close", "give", "administer",
    "register", "approve", "reject", "schedule", "mark", "transfer", "allocate", "release", "authorize",
    "upload", "purge", "restore", "activate", "clear", "toggle", "initiate", "escalate", "confirm",
    "creates", "updates", "sets", "adds", "deletes", "removes", "records", "submits", "assigns", "books",
    "sends", "cancels", "schedules", "marks", "moves", "opens", "closes", "executes", "applies", "issues",
})
_WORD = re.compile(r"[A-Za-z]+")


def infer_read_only(name: str, description: str) -> bool | None:
    """True for get_/list_/search_... tools, False for set_/update_/create_... ones, None when unsure."""
    for text in (re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name), description):
        words = _WORD.findall(text)
        if words:
            verb = words[0].lower()
            if verb in _READS:
                return True
            if verb in _WRITES:
                return False
    return None
