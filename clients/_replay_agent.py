"""The reference-solution replayer: the task's golden tool calls over MCP, then its reference answer."""

from __future__ import annotations

import json

from mcp import Client

from occusim.environments import Task, ToolErrorType, read_tool_error, reports_error

from ._conversation import AgentRun, McpConversation, OnToolResult

REPLAY_AGENT = "reference-replay"


# Error types worth repeating a call for: the server's transient failures (injected explicit faults, a
# world model without an answer). Anything else may have been executed and must not be repeated.
TRANSIENT_ERRORS = frozenset({
    ToolErrorType.HTTP_ERROR, ToolErrorType.TIMEOUT, ToolErrorType.CONNECTION_ERROR,
    ToolErrorType.SIMULATOR_ERROR, ToolErrorType.SIMULATOR_UNAVAILABLE,
})


def _transient(structured: object) -> bool:
    error = read_tool_error(structured)
    return error is not None and error.type in TRANSIENT_ERRORS


class ReplayAgent:
    """Replays `task.reference_solution` in order and submits `task.final_answer`; no model is involved.

    Its runs are labelled with the agent model "reference-replay". A call whose golden observation is a
    success but which fails transiently (an injected HTTP error or timeout, a simulator error) is repeated
    up to `retries` times, as a careful professional would; other results, degraded or not, are taken as
    they come. `max_turns` caps the number of reference calls made.
    """

    name = REPLAY_AGENT

    def __init__(self, task: Task, *, retries: int = 3) -> None:
        if not task.reference_solution:
            raise ValueError(f"task {task.id!r} has no reference_solution to replay; use an LLM agent")
        self.task = task
        self.retries = retries

    async def run(self, client: Client, *, occupation: str | None = None, seed: int | None = None,
                  max_turns: int | None = None, on_tool_result: OnToolResult | None = None) -> AgentRun:
        conversation = McpConversation(client, on_tool_result=on_tool_result)
        await conversation.open(occupation)
        steps = self.task.reference_solution[:max_turns] if max_turns else self.task.reference_solution
        for number, step in enumerate(steps):
            raw = json.dumps(step.arguments, ensure_ascii=False)
            for attempt in range(self.retries + 1):
                call_id = f"call_{number}" if attempt == 0 else f"call_{number}_retry{attempt}"
                (event,) = await conversation.act(None, [(call_id, step.tool, dict(step.arguments), raw)])
                if not (event.is_error and _transient(event.structured)) or reports_error(step.observation):
                    break
        await conversation.submit(self.task.final_answer or "")
        return conversation.run(self.name, "submitted" if conversation.submitted else "max_steps")
