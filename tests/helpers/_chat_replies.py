"""Fake OpenAI chat completions: a reply body, the same reply as a `stream: true` event stream, and tool arguments
made up from a tool's input schema."""

from __future__ import annotations

import json
from typing import Any


def chat_reply(
    content: str | None, tool_calls: list[dict[str, Any]] | None = None, usage: tuple[int, int] = (10, 5)
) -> dict[str, Any]:
    """A chat.completion body with one assistant message; `usage` is (prompt, completion) tokens."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    prompt, completion = usage
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 0, "model": "fake",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def chat_stream(body: dict[str, Any]) -> bytes:
    """A chat.completion body as OpenAI streams it: a chunk with the role and content, one per tool call, one
    with the finish reason, one with the usage (as `stream_options.include_usage` asks), then [DONE]."""
    [choice] = body["choices"]
    message = choice["message"]
    head = {"id": body["id"], "object": "chat.completion.chunk", "created": body["created"], "model": body["model"]}

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}

    chunks = [chunk({"role": "assistant", "content": message.get("content")})]
    chunks += [chunk({"tool_calls": [{"index": index, **call}]})
               for index, call in enumerate(message.get("tool_calls") or [])]
    chunks.append(chunk({}, choice["finish_reason"]))
    chunks.append({**head, "choices": [], "usage": body.get("usage")})
    events = [f"data: {json.dumps(item)}\n\n" for item in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode()


def schema_arguments(schema: dict[str, Any], text: str) -> dict[str, Any]:
    """Arguments for the required properties (or the first one): an enum's first value, a fixed value per
    type, `text` for strings and anything untyped."""
    properties = schema.get("properties") or {}
    return {
        name: _value(properties.get(name) or {}, text) for name in schema.get("required") or list(properties)[:1]
    }


def _value(schema: dict[str, Any], text: str) -> Any:
    if schema.get("enum"):
        return schema["enum"][0]
    kind = schema.get("type")
    values: dict[str, Any] = {"integer": 7, "number": 2.5, "boolean": True, "array": [], "object": {}}
    return values.get(kind, text) if isinstance(kind, str) else text
