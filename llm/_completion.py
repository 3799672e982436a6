"""What one model call returns: text, parsed tool calls, usage and timing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from occusim.environments import Usage

from ._json_output import parse_json_output


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str
    # Why `raw_arguments` is not a JSON object, for a call kept as the model sent it (`arguments` is then {}).
    unreadable: str | None = None


@dataclass
class Completion:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    model: str = ""
    cached: bool = False
    finish_reason: str | None = None

    def json(self) -> Any:
        """The first JSON value in the text (tolerates fences and prose); raises LLMOutputError."""
        return parse_json_output(self.text)
