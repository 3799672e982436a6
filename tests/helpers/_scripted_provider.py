"""Scripted models behind a real OpenAI-compatible endpoint: each model name answered by a responder, so
that `openai/<name>` models work from any process that can reach 127.0.0.1 (worker processes, Ray actors)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from occusim.llm import ScriptedReply

from ._provider import STUB_KEY, ProviderStub, Reply
from ._replay import ReplayWorld, ScriptedAgent

# (messages, request body) -> a reply, as a scripted model's responder answers.
Responder = Callable[[list[dict], dict], Any]


def passing_verdicts(messages: list[dict], body: dict) -> dict:
    """A judge's answer passing every llm check its request's response schema lists."""
    schema = body["response_format"]["json_schema"]["schema"]
    return {"verdicts": {check_id: {"passed": True, "reason": "fine", "evidence_steps": []}
                         for check_id in schema["properties"]["verdicts"]["required"]}}


def replay_responders(policy: Callable[[str, int | None], str] = lambda task, seed: "replay") -> dict[str, Responder]:
    """A batch run on the bundled reference solutions: `fake-world` replays them, `fake-agent` follows
    them by `policy` (as ScriptedAgent reads it), `fake-judge` passes every check."""
    return {"fake-world": ReplayWorld(), "fake-agent": ScriptedAgent(policy), "fake-judge": passing_verdicts}


class ScriptedProvider:
    """An endpoint answering model `name` with `responders[name]`; keeps every request body."""

    def __init__(self, responders: dict[str, Responder], *, latency: float = 0.0) -> None:
        self.responders = responders
        self.stub = ProviderStub(self._complete, latency=latency)

    @property
    def api_base(self) -> str:
        return self.stub.url

    @property
    def requests(self) -> list[dict[str, Any]]:
        return self.stub.requests

    def of(self, model: str) -> list[dict[str, Any]]:
        return [body for body in self.requests if body["model"] == model]

    def environment(self, roles: tuple[str, ...] = ("WORLD_MODEL", "AGENT", "JUDGE")) -> dict[str, str]:
        """OCCUSIM_<ROLE>_API_BASE and _API_KEY for `roles`, pointing at this endpoint."""
        return {name: value for role in roles for name, value in
                ((f"OCCUSIM_{role}_API_BASE", self.api_base), (f"OCCUSIM_{role}_API_KEY", STUB_KEY))}

    @contextmanager
    def running(self) -> Iterator[ScriptedProvider]:
        with self.stub.running():
            yield self

    def _complete(self, number: int, body: dict[str, Any], _key: str) -> Reply:
        answer = self.responders[body["model"]](body["messages"], body)
        reply = answer if isinstance(answer, ScriptedReply) else ScriptedReply(
            text=answer if isinstance(answer, str) else json.dumps(answer))
        calls = [{"id": call.get("id") or f"call_{n}", "type": "function",
                  "function": {"name": call["name"], "arguments": json.dumps(call.get("arguments", {}))}}
                 for n, call in enumerate(reply.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        return Reply({
            "id": f"chatcmpl-{number}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        })
