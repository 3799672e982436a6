"""An agent's conversation with one MCP server, kept in OpenAI chat format exactly as the agent saw it."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from occusim.environments import SUBMIT_TOOL, TASK_PROMPT, ToolError, ToolErrorType, Usage

RunEnding = Literal["submitted", "max_steps", "no_tool_call"]

SYSTEM_PROMPT = """\
You are {role}, doing your job through your workplace's software tools.

Carry out the task you are given by calling the tools. Base what you do and what you report on what the \
tools return: do not guess what a tool would return, and do not invent data you did not receive.

When you are done, call `{submit}` exactly once with your final answer: what you did, what you found, \
and the figures or decisions the task asks for."""


def system_prompt(occupation: str | None) -> str:
    """The agent's system prompt: its professional role and how to finish. The same in every fault mode."""
    role = f"{_article(occupation)} {occupation}" if occupation else "a professional"
    return SYSTEM_PROMPT.format(role=role, submit=SUBMIT_TOOL)


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


@dataclass
class ToolEvent:
    """One tool call and its result as the agent received it."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    text: str
    is_error: bool
    structured: Any = None


OnToolResult = Callable[[ToolEvent], Awaitable[None] | None]


@dataclass
class AgentRun:
    """What an agent did in one episode: its conversation, its final answer and how the run ended.

    `ended` is "submitted" when the agent called submit_result itself; "max_steps" or "no_tool_call" when
    the runner submitted on its behalf (the answer then starts with a bracketed label saying so).
    """

    agent_model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    final_answer: str
    ended: RunEnding
    tool_calls: int
    usage: Usage = field(default_factory=Usage)
    submit_result: dict[str, Any] | None = None
    # Why the agent's provider failed, when the run stopped there and was scored as OccuBench's harness does.
    outage: str | None = None


def openai_tool(tool: types.Tool) -> dict[str, Any]:
    """An MCP tool in the OpenAI function-tool format every litellm provider accepts."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description or "",
            "parameters": tool.input_schema or {"type": "object", "properties": {}},
        },
    }


def result_text(result: types.CallToolResult) -> str:
    """The text of a tool result as a text-only agent reads it."""
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


class McpConversation:
    """The messages of one agent with one MCP server: system, task, tool calls, results, submission."""

    def __init__(self, client: Client, *, on_tool_result: OnToolResult | None = None) -> None:
        self.client = client
        self.on_tool_result = on_tool_result
        self.messages: list[dict[str, Any]] = []
        self.tools: list[dict[str, Any]] = []
        self.tool_calls = 0
        self.submitted = False
        self.final_answer = ""
        self.submit_result: dict[str, Any] | None = None

    async def open(self, occupation: str | None = None) -> None:
        """List the server's tools and read its task; starts the conversation with system and user turns."""
        listed = await self.client.list_tools()
        names = [tool.name for tool in listed.tools]
        if SUBMIT_TOOL not in names:
            raise MCPError(
                types.INVALID_REQUEST,
                f"the MCP server offers no {SUBMIT_TOOL!r} tool (it has: {', '.join(names) or 'none'}); "
                "is it an occusim episode?",
            )
        self.tools = [openai_tool(tool) for tool in listed.tools]
        self.messages = [
            {"role": "system", "content": system_prompt(occupation)},
            {"role": "user", "content": await self._task_text()},
        ]

    async def _task_text(self) -> str:
        try:
            prompt = await self.client.get_prompt(TASK_PROMPT)
        except MCPError:
            prompt = None
        if prompt is not None:
            texts = [m.content.text for m in prompt.messages if isinstance(m.content, types.TextContent)]
            if texts:
                return "\n\n".join(texts)
        if self.client.instructions:
            return self.client.instructions
        raise MCPError(types.INVALID_REQUEST, f"the MCP server publishes no task (no {TASK_PROMPT!r} prompt, "
                                              "no instructions)")

    def say(self, role: Literal["assistant", "user"], text: str) -> None:
        self.messages.append({"role": role, "content": text})

    async def act(self, text: str | None, calls: Sequence[tuple[str, str, dict[str, Any], str]]) -> list[ToolEvent]:
        """Record one assistant turn of tool calls `(call_id, name, arguments, raw_arguments)` and run them.

        Calls run in order; a `submit_result` call ends the turn (later calls of the turn are answered as
        not run, so every call keeps its result message).
        """
        self.messages.append({
            "role": "assistant",
            "content": text or None,
            "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": name, "arguments": raw}}
                for call_id, name, _, raw in calls
            ],
        })
        events = []
        for call_id, name, arguments, _ in calls:
            if self.submitted:
                not_run = ToolError(type=ToolErrorType.NOT_RUN,
                                    message=f"not run: {SUBMIT_TOOL} already closed the episode")
                self._tool_message(call_id, json.dumps(not_run.envelope()))
                continue
            event = await self._call(call_id, name, arguments)
            events.append(event)
        return events

    async def submit(self, answer: str) -> ToolEvent:
        """Submit `answer` on the agent's behalf, as one more assistant turn."""
        call_id = f"call_submit_{len(self.messages)}"
        raw = json.dumps({"answer": answer}, ensure_ascii=False)
        events = await self.act(None, [(call_id, SUBMIT_TOOL, {"answer": answer}, raw)])
        return events[0]

    async def _call(self, call_id: str, name: str, arguments: dict[str, Any]) -> ToolEvent:
        try:
            result = await self.client.call_tool(name, arguments)
        except MCPError as error:
            # A protocol-level refusal (e.g. a tool the server does not list) is the agent's to handle.
            event = _error_event(call_id, name, arguments,
                                 ToolError(type=ToolErrorType.MCP_ERROR, code=error.code, message=str(error)))
        except RuntimeError as error:
            # The SDK rejects structured content that breaks the advertised output schema; an agent built on
            # it sees a failed call, so this one does too.
            if not str(error).startswith(_INVALID_RESULT):
                raise
            event = _error_event(call_id, name, arguments,
                                 ToolError(type=ToolErrorType.INVALID_RESULT, message=str(error)))
        else:
            event = ToolEvent(call_id, name, arguments, result_text(result), result.is_error,
                              result.structured_content)
        self._tool_message(call_id, event.text)
        if name == SUBMIT_TOOL:
            if not event.is_error:
                self.submitted = True
                self.final_answer = str(arguments.get("answer", ""))
                self.submit_result = event.structured if isinstance(event.structured, dict) else None
        else:
            self.tool_calls += 1
        if self.on_tool_result is not None:
            outcome = self.on_tool_result(event)
            if inspect.isawaitable(outcome):
                await outcome
        return event

    def _tool_message(self, call_id: str, text: str) -> None:
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": text})

    def run(self, agent_model: str, ended: RunEnding, usage: Usage | None = None) -> AgentRun:
        return AgentRun(
            agent_model=agent_model, messages=self.messages, tools=self.tools, final_answer=self.final_answer,
            ended=ended, tool_calls=self.tool_calls, usage=usage or Usage(), submit_result=self.submit_result,
        )


_INVALID_RESULT = "Invalid structured content returned by tool"


def _error_event(call_id: str, name: str, arguments: dict[str, Any], error: ToolError) -> ToolEvent:
    payload = error.envelope()
    return ToolEvent(call_id, name, arguments, json.dumps(payload, ensure_ascii=False), is_error=True,
                     structured=payload)
