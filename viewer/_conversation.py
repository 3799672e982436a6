"""The agent's side of an episode, from its messages (OpenAI format): the system prompt and the task it was
given, and what it said between its tool calls, placed before the step each call became."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from occusim.environments import StepRecord

# How each speaker is named on the page.
SPEAKERS = {"system": "System prompt", "user": "To the agent", "assistant": "Agent"}


@dataclass(frozen=True)
class Said:
    role: str
    text: str

    @property
    def speaker(self) -> str:
        return SPEAKERS.get(self.role, self.role)


@dataclass
class Conversation:
    opening: list[Said] = field(default_factory=list)  # the system prompt and the task message
    before_step: dict[int, list[Said]] = field(default_factory=dict)  # by step index
    closing: list[Said] = field(default_factory=list)  # after the last recorded step

    @property
    def task_text(self) -> str | None:
        """The task message the agent was given (the instruction, as the server's prompt words it)."""
        return next((said.text for said in self.opening if said.role == "user"), None)


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content
                         if isinstance(part, dict) and part.get("type") == "text")
    return ""


def conversation(messages: Sequence[dict[str, Any]], steps: Sequence[StepRecord]) -> Conversation:
    """Place each message: the leading system and user turns open it; what the agent said (and any later
    message to it) goes before the step its next tool call became, matched by tool name in order; the rest
    closes it. Tool results are left out: each step shows its observation."""
    found = Conversation()
    position = 0
    while position < len(messages) and messages[position].get("role") in ("system", "user"):
        text = text_of(messages[position].get("content"))
        if text:
            found.opening.append(Said(str(messages[position]["role"]), text))
        position += 1
    pending: list[Said] = []
    cursor = 0
    for message in messages[position:]:
        role = message.get("role")
        if role not in ("assistant", "user"):
            continue
        text = text_of(message.get("content")).strip()
        if text:
            pending.append(Said(str(role), text))
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or {}).get("name") if isinstance(call, dict) else None
            match = next((index for index in range(cursor, len(steps)) if steps[index].tool == name), None)
            if match is None:
                continue  # a call the server did not record as a step (submit_result, a refused call)
            if pending:
                found.before_step.setdefault(steps[match].index, []).extend(pending)
                pending = []
            cursor = match + 1
    found.closing = pending
    return found
