"""A recording OpenAI-compatible chat endpoint on loopback whose replies depend on the request alone.

The model name picks the role: `fake-agent` makes two turns of tool calls (with compact, non-ASCII
argument strings) and then answers; `fake-world` answers a JSON observation in the harness's tags, the first ask of a
conversation with unusable text so the retry path is exercised; `fake-verifier` answers a fenced verdict
on its first and third ask of a prompt and nothing usable on the second. Every request body is kept,
with the bearer key that sent it.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.helpers import ProviderStub, Reply, chat_reply, schema_arguments

AGENT, WORLD, VERIFIER = "fake-agent", "fake-world", "fake-verifier"
# An agent whose first calls carry arguments that are not JSON, and a JSON array instead of an object.
MALFORMED_AGENT = "fake-agent-malformed"
MALFORMED_ARGUMENTS = ('{"id": "Zürich-7", "count": ', '["Zürich-7", 2]')
# An agent and a verifier whose provider answers every request with HTTP 500.
DOWN_AGENT, DOWN_VERIFIER = "fake-agent-down", "fake-verifier-down"
_DOWN = {"error": {"message": "Internal Server Error", "type": "server_error"}}


@dataclass
class Recorded:
    key: str
    body: dict[str, Any]


@dataclass
class RecordingEndpoint:
    url: str = ""
    # The world model's answer tags, taken from the harness under test (the project holds none of its text).
    tags: tuple[str, str] = ("", "")
    requests: list[Recorded] = field(default_factory=list)
    _seen: Counter[str] = field(default_factory=Counter)

    def of(self, key: str, model: str) -> list[dict[str, Any]]:
        return [r.body for r in self.requests if r.key == key and r.body.get("model") == model]

    def reply(self, key: str, body: dict[str, Any]) -> dict[str, Any] | Reply:
        """The answer to one request; the stub serving the endpoint calls it one request at a time."""
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        self.requests.append(Recorded(key, body))
        self._seen[key + digest] += 1
        ask = self._seen[key + digest]
        model = body.get("model")
        if model in (DOWN_AGENT, DOWN_VERIFIER):
            return Reply(_DOWN, status=500)
        if model == AGENT:
            return _agent(body)
        if model == MALFORMED_AGENT:
            return _malformed_agent(body)
        if model == WORLD:
            return _message(_observation(body, digest, ask, self.tags))
        return _message(_verdict(ask))


def _agent(body: dict[str, Any]) -> dict[str, Any]:
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    tools = body.get("tools") or []
    if turn >= 2 or not tools:
        return _message(f"Final answer after {turn} turns: figures checked, nothing left to do.")
    picked = tools[:2] if turn == 0 else tools[-1:]
    calls = [
        {
            "id": f"call_{turn}_{index}",
            "type": "function",
            "function": {
                "name": tool["function"]["name"],
                "arguments": json.dumps(schema_arguments(tool["function"].get("parameters") or {}, "Zürich-7"),
                                        separators=(",", ":"), ensure_ascii=False),
            },
        }
        for index, tool in enumerate(picked)
    ]
    return _message("Looking at the records first." if turn == 0 else None, calls)


def _malformed_agent(body: dict[str, Any]) -> dict[str, Any]:
    turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
    tools = body.get("tools") or []
    if turn >= 1 or not tools:
        return _message(f"Final answer after {turn} turns: the records did not load.")
    calls = [
        {"id": f"call_bad_{index}", "type": "function",
         "function": {"name": tools[index % len(tools)]["function"]["name"], "arguments": arguments}}
        for index, arguments in enumerate(MALFORMED_ARGUMENTS)
    ]
    return _message(None, calls)


def _observation(body: dict[str, Any], digest: str, ask: int, tags: tuple[str, str]) -> str:
    opening, closing = tags
    history = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if history == 0 and ask == 1:
        return f"{opening}the service is thinking{closing}"
    data = {"status": "ok", "ref": digest[:10], "items": [{"id": 1}, {"id": 2}]}
    return f"{opening}\n{json.dumps(data)}\n{closing}"


def _verdict(ask: int) -> str:
    if ask % 3 == 2:
        return "I cannot decide."
    return '```json\n{"is_correct": true, "feedback": "every step checks out"}\n```'


def _message(content: str | None, tool_calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return chat_reply(content, tool_calls, usage=(10, 5))


@contextmanager
def recording_endpoint(observation_pattern: str) -> Iterator[RecordingEndpoint]:
    """Serve the endpoint on a free loopback port for the duration of the block.

    `observation_pattern` is the harness's regular expression for the world model's answer,
    `<open>(.*?)<close>`; the endpoint wraps its observations in those tags.
    """
    opening, _, closing = observation_pattern.partition("(.*?)")
    endpoint = RecordingEndpoint(tags=(opening, closing))
    def answer(_number: int, body: dict[str, Any], key: str) -> Reply:
        reply = endpoint.reply(key, body)
        return reply if isinstance(reply, Reply) else Reply(reply)

    with ProviderStub(answer).running() as stub:
        endpoint.url = stub.url
        yield endpoint
