"""One episode with the OpenAI Agents SDK's `MCPServerStdio` and `MCPServerStreamableHttp`.

Their read timeout defaults to 5 s, less than a world-model call takes: `client_session_timeout_seconds`
raises it, as docs/mcp-clients.md says.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version

from agents.mcp import MCPServer, MCPServerStdio, MCPServerStreamableHttp
from episode_wire import (
    EPISODE_CALLS,
    TIMEOUT_SECONDS,
    EpisodeReport,
    ToolResult,
    parsed,
    read_target,
    report,
)
from mcp.types import TextContent


async def play(server: MCPServer) -> EpisodeReport:
    tools = await server.list_tools()
    results = []
    for tool, arguments in EPISODE_CALLS:
        answer = await server.call_tool(tool, arguments)
        text = "".join(part.text for part in answer.content if isinstance(part, TextContent))
        content = answer.structured_content if answer.structured_content is not None else parsed(text)
        results.append(ToolResult(tool=tool, is_error=answer.is_error, content=content))
    return EpisodeReport(client=f"openai-agents {version('openai-agents')}", tools=[t.name for t in tools],
                         results=results)


async def main() -> None:
    target = read_target()
    if target.stdio:
        stdio = target.stdio
        async with MCPServerStdio({"command": stdio.command, "args": stdio.args, "env": stdio.env},
                                  client_session_timeout_seconds=TIMEOUT_SECONDS) as server:
            report(await play(server))
    else:
        assert target.http
        params = {"url": target.http.url, "headers": target.http.headers, "timeout": TIMEOUT_SECONDS}
        async with MCPServerStreamableHttp(params, client_session_timeout_seconds=TIMEOUT_SECONDS) as server:
            report(await play(server))


if __name__ == "__main__":
    asyncio.run(main())
