"""What an MCP POST asks for, read before the SDK answers it: the tool calls it makes (counted against the
tenant's limits) and the protocol version an `initialize` asks for."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class McpPost:
    tool_calls: int = 0
    initialize_version: str | None = None


def read_post(body: bytes) -> McpPost:
    """The body's JSON-RPC requests (one, or a batch); a body that is not JSON-RPC asks for nothing here
    (the SDK answers it with its own error)."""
    try:
        parsed = json.loads(body)
    except (ValueError, RecursionError):
        return McpPost()
    messages = parsed if isinstance(parsed, list) else [parsed]
    requests = [message for message in messages if isinstance(message, dict) and "id" in message]
    calls = sum(1 for message in requests if message.get("method") == "tools/call")
    version = next((_requested_version(message) for message in requests if message.get("method") == "initialize"),
                   None)
    return McpPost(tool_calls=calls, initialize_version=version)


def _requested_version(message: dict[str, Any]) -> str:
    params = message.get("params")
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    return requested if isinstance(requested, str) else ""
