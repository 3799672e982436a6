"""What the interop driver hands a client script (the server to reach) and what the script reports back.

Both sides import this file: the driver in occusim's environment, each client script in its own virtualenv
(where pydantic comes with the MCP SDK), so the exchange has one definition.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from pydantic import BaseModel

# The episode every client plays on the triage task: a call that works, one the server refuses, the answer.
# The refused call has every required argument (openai-agents checks those itself, before sending) but one
# out of the schema's range.
CALL = ("set_priority", {"patient_id": "P1", "priority": 1})
INVALID_CALL = ("set_priority", {"patient_id": "P1", "priority": 9})
ANSWER = "P1 has priority 1"
SUBMIT = "submit_result"
# What every client calls, in this order.
EPISODE_CALLS: list[tuple[str, dict[str, Any]]] = [CALL, INVALID_CALL, (SUBMIT, {"answer": ANSWER})]
# Long enough for a world-model call; the scripted one answers at once.
TIMEOUT_SECONDS = 120


class StdioTarget(BaseModel):
    command: str
    args: list[str]
    env: dict[str, str]


class HttpTarget(BaseModel):
    url: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


class Target(BaseModel):
    """Exactly one of the two transports."""

    stdio: StdioTarget | None = None
    http: HttpTarget | None = None


class ToolResult(BaseModel):
    tool: str
    is_error: bool
    content: Any  # the structured content, or the text parsed as JSON where the client gives only text


class EpisodeReport(BaseModel):
    client: str  # distribution and version
    tools: list[str]
    results: list[ToolResult]


def read_target() -> Target:
    """The target, given as the script's one argument (JSON)."""
    return Target.model_validate_json(sys.argv[1])


def parsed(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def report(episode: EpisodeReport) -> None:
    """The report, as the last line of stdout."""
    print(episode.model_dump_json())
