"""One episode as an MCP server: the scenario's tools plus `submit_result`, and the task as instructions,
prompt and resource. Transports (stdio, streamable HTTP) wrap the `Server` this module builds."""

from __future__ import annotations

import json
import weakref
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from opentelemetry import trace

from occusim import __version__
from occusim.environments import (
    RAW_ARGUMENTS_META,
    SUBMIT_TOOL,
    TASK_PROMPT,
    TASK_RESOURCE,
    ToolError,
    ToolErrorType,
)

from ._advertised import advertised_output_schema
from ._errors import EpisodeError
from ._portable_schema import portable_schema

try:  # the SDK's documented opt-out names this class; an SDK that moves it keeps its spans
    from mcp.server._otel import OpenTelemetryMiddleware

    _SPAN_LAYERS: tuple[type, ...] = (OpenTelemetryMiddleware,)
except ImportError:  # pragma: no cover - depends on the SDK's layout
    _SPAN_LAYERS = ()

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from occusim.environments import Scenario

    from ._episode import Episode
    from ._judging import BackgroundJudging

SUBMIT_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "Your final answer: what you did and what you found."}
    },
    "required": ["answer"],
    "additionalProperties": False,
}
SUBMIT_DESCRIPTION = (
    "Finish the task: submit your final answer. The episode closes and is scored; "
    "no further tool calls are accepted afterwards."
)

def task_brief(episode: Episode) -> str:
    """The task as the agent reads it, identical in the instructions, the `task` prompt and the resource."""
    return episode.protocol.brief(episode)


def _tool_result(payload: dict[str, Any], *, is_error: bool) -> types.CallToolResult:
    """Both forms of one result: the JSON text for text-only clients and the structured object."""
    text = json.dumps(payload, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(text=text)], structured_content=payload, is_error=is_error
    )


def _error_result(error: ToolError) -> types.CallToolResult:
    return _tool_result(error.envelope(), is_error=True)


def _episode_error_result(error: EpisodeError) -> types.CallToolResult:
    return _error_result(ToolError(type=error.error_type, message=str(error)))


def build_mcp_server(episode: Episode, *, judging: BackgroundJudging | None = None) -> Server[Any]:
    """An MCP low-level `Server` driving `episode`: every tool call is one `Episode.step`.

    Episode errors never escape as protocol errors: an unknown tool, a closed episode or the step
    limit come back as `is_error` results whose text tells the agent what to do next. With `judging`,
    `submit_result` answers as soon as the episode is closed and the judgment runs in the background;
    without it, the judge hook (if any) runs before the answer.
    """
    scenario = episode.scenario
    # What the agent reads names the workplace, never the task's title: a title is the author's label, and a
    # good one names what the task tests (the trap an agent must find in the data).
    brief = task_brief(episode)
    tools = scenario_tools(scenario, output_schemas=episode.protocol.advertises_output_schemas(episode))
    input_schemas = {tool.name: tool.input_schema for tool in tools}

    async def list_tools(ctx: ServerRequestContext, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext, params: types.CallToolRequestParams) -> types.CallToolResult:
        raw = (params.meta or {}).get(RAW_ARGUMENTS_META)
        return await call_episode_tool(episode, params.name, dict(params.arguments or {}), judging=judging,
                                       raw_arguments=raw if isinstance(raw, str) else None)

    async def list_prompts(ctx: ServerRequestContext, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(
            prompts=[types.Prompt(name=TASK_PROMPT, title=scenario.name, description="The task to carry out.")]
        )

    async def get_prompt(ctx: ServerRequestContext, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        if params.name != TASK_PROMPT:
            raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}; this server has {TASK_PROMPT!r}")
        message = types.PromptMessage(role="user", content=types.TextContent(text=brief))
        return types.GetPromptResult(description="The task to carry out.", messages=[message])

    async def list_resources(ctx: ServerRequestContext, params: Any) -> types.ListResourcesResult:
        resource = types.Resource(
            uri=TASK_RESOURCE, name="task", title=scenario.name, mime_type="text/plain",
            description="The task instruction.",
        )
        return types.ListResourcesResult(resources=[resource])

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != TASK_RESOURCE:
            raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri!r}; this server has {TASK_RESOURCE}")
        contents = types.TextResourceContents(uri=TASK_RESOURCE, mime_type="text/plain", text=brief)
        return types.ReadResourceResult(contents=[contents])

    server = Server(
        f"occusim-{scenario.id}",
        version=__version__,
        title=scenario.name,
        instructions=brief,
        get_tool_input_schema=input_schemas.get,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    if not tracing_configured():
        server.middleware = [layer for layer in server.middleware if not isinstance(layer, _SPAN_LAYERS)]
    return server


# Each scenario's tool list, built once: every episode of the scenario lists the same tools, and relaxing
# their output schemas is most of the work of opening an episode's endpoint. Keyed by the scenario object,
# and dropped with it.
_TOOLS: dict[tuple[int, bool], tuple[weakref.ref[Scenario], list[types.Tool]]] = {}


def scenario_tools(scenario: Scenario, *, output_schemas: bool = True) -> list[types.Tool]:
    """An episode's tools as MCP lists them: the scenario's, then `submit_result`; with `output_schemas`, each
    with its output schema (a protocol whose results are the world model's text, verbatim, lists none).

    The list is shared by every episode of `scenario`: treat it as read-only."""
    key = (id(scenario), output_schemas)
    cached = _TOOLS.get(key)
    if cached is not None and cached[0]() is scenario:
        return cached[1]
    tools = _listed_tools(scenario, output_schemas)
    _TOOLS[key] = (weakref.ref(scenario, lambda _: _TOOLS.pop(key, None)), tools)
    return tools


def _listed_tools(scenario: Scenario, output_schemas: bool) -> list[types.Tool]:
    tools = [
        types.Tool(
            name=tool.name,
            description=tool.description,
            input_schema=portable_schema(tool.input_schema),
            output_schema=(
                advertised_output_schema(tool.output_schema) if tool.output_schema and output_schemas else None
            ),
        )
        for tool in scenario.tools
    ]
    tools.append(types.Tool(name=SUBMIT_TOOL, description=SUBMIT_DESCRIPTION, input_schema=SUBMIT_INPUT_SCHEMA))
    return tools


async def call_episode_tool(episode: Episode, name: str, arguments: dict[str, Any], *,
                            judging: BackgroundJudging | None = None,
                            raw_arguments: str | None = None) -> types.CallToolResult:
    """One tool call on `episode` as an MCP result: a step, or the submission for `submit_result`.

    Episode errors (an unknown tool, a closed episode, the step limit) come back as `is_error` results. With
    `judging`, the submission is judged in the background; without it, the judge hook runs before the answer.
    """
    try:
        if name == SUBMIT_TOOL:
            return await _submit(episode, arguments, judging)
        outcome = await episode.step(name, arguments, raw_arguments=raw_arguments)
    except EpisodeError as error:
        return _episode_error_result(error)
    if isinstance(outcome.observation, str):
        return types.CallToolResult(content=[types.TextContent(text=outcome.observation)], is_error=outcome.is_error)
    return _tool_result(_as_object(outcome.observation), is_error=outcome.is_error)


def tracing_configured() -> bool:
    """Whether an OpenTelemetry tracer provider is set (by its SDK or an instrumentation), so that the spans the
    MCP SDK opens around every request go somewhere. Without one they are no-ops that still cost about 0.1 ms
    of CPU a request (a tenth of a tool call's own), so the servers leave them out."""
    return not isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider))


async def _submit(
    episode: Episode, arguments: dict[str, Any], judging: BackgroundJudging | None
) -> types.CallToolResult:
    answer = arguments.get("answer")
    extra = sorted(set(arguments) - {"answer"})
    if not isinstance(answer, str) or extra:
        problem = f"unexpected arguments {extra}" if extra else "'answer' must be a string"
        message = f"invalid arguments for {SUBMIT_TOOL!r}: {problem}"
        return _error_result(ToolError(type=ToolErrorType.INVALID_ARGUMENTS, message=message))
    record = await episode.submit(answer, run_judge=judging is None)
    if judging is not None:
        judging.start(episode)
    return _tool_result(
        {"status": record.status, "episode_id": record.id, "steps": len(record.steps),
         "message": "Result submitted; the episode is closed."},
        is_error=False,
    )


def _as_object(observation: Any) -> dict[str, Any]:
    # Structured results must be JSON objects for clients before protocol 2026-07-28.
    return observation if isinstance(observation, dict) else {"result": observation}
