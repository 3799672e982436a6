"""Deterministic scripted models for tests: a responder function answers instead of a provider."""

from __future__ import annotations

import inspect
import itertools
import json
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ._errors import LLMError

SCRIPTED_PREFIX = "scripted/"
# The one model name litellm sees for every scripted call; registered at zero price in _litellm.
SCRIPTED_LITELLM_MODEL = "occusim-scripted"

Responder = Callable[[list[dict], dict], "ScriptedReply | str | dict | Awaitable[ScriptedReply | str | dict]"]


@dataclass
class ScriptedReply:
    """A scripted answer; tool_calls items are {"name": str, "arguments": dict}.

    `finish_reason` replaces the provider's "stop", e.g. "length" for an answer cut at the token limit.
    """

    text: str = ""
    tool_calls: list[dict] = field(default_factory=list)
    finish_reason: str | None = None


_registry: dict[str, Responder] = {}
_registry_lock = threading.Lock()
_anonymous = itertools.count(1)


def scripted_model(responder: Responder, name: str | None = None) -> str:
    """Register `responder` and return its model string "scripted/<name>" for complete()."""
    with _registry_lock:
        if name is None:
            name = f"{getattr(responder, '__name__', 'responder')}-{next(_anonymous)}"
        _registry[name] = responder
    return SCRIPTED_PREFIX + name


def scripted_responder(model: str) -> Responder:
    name = model.removeprefix(SCRIPTED_PREFIX)
    with _registry_lock:
        responder = _registry.get(name)
        known = sorted(_registry)
    if responder is None:
        raise LLMError(
            f"no scripted model named {name!r} is registered; call scripted_model(responder, name={name!r}) "
            f"first (registered: {', '.join(known) or 'none'})"
        )
    return responder


async def run_responder(responder: Responder, messages: list[dict], request: dict) -> ScriptedReply:
    """Call the responder (sync or async) and normalise its answer to a ScriptedReply."""
    answer: Any = responder(messages, request)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, ScriptedReply):
        return answer
    if isinstance(answer, str):
        return ScriptedReply(text=answer)
    if isinstance(answer, (dict, list)):
        return ScriptedReply(text=json.dumps(answer))
    raise LLMError(
        f"scripted responder {getattr(responder, '__name__', responder)!r} returned {type(answer).__name__}; "
        "expected ScriptedReply, str or dict"
    )


def mock_tool_calls(reply: ScriptedReply) -> list[dict]:
    """Render scripted tool calls in the OpenAI wire shape litellm's mock path parses."""
    calls = []
    for index, call in enumerate(reply.tool_calls):
        if "name" not in call:
            raise LLMError(f"scripted tool call #{index} has no 'name': {call!r}")
        arguments = call.get("arguments", {})
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        calls.append(
            {"id": call.get("id") or f"call_{index}", "type": "function",
             "function": {"name": call["name"], "arguments": raw}}
        )
    return calls
