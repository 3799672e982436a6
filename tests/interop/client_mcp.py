"""One episode with the official MCP SDK's 1.x `ClientSession` (stdio_client, streamablehttp_client)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from importlib.metadata import version

import httpx
from episode_wire import (
    EPISODE_CALLS,
    TIMEOUT_SECONDS,
    EpisodeReport,
    ToolResult,
    parsed,
    read_target,
    report,
)
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, TextContent


def result(tool: str, answer: CallToolResult) -> ToolResult:
    text = "".join(part.text for part in answer.content if isinstance(part, TextContent))
    content = answer.structuredContent if answer.structuredContent is not None else parsed(text)
    return ToolResult(tool=tool, is_error=answer.isError, content=content)


async def play(session: ClientSession) -> EpisodeReport:
    await session.initialize()
    listed = await session.list_tools()
    results = []
    for tool, arguments in EPISODE_CALLS:
        results.append(result(tool, await session.call_tool(tool, arguments)))
    return EpisodeReport(client=f"mcp {version('mcp')}", tools=[tool.name for tool in listed.tools], results=results)


async def main() -> None:
    target = read_target()
    timeout = timedelta(seconds=TIMEOUT_SECONDS)
    if target.stdio:
        server = StdioServerParameters(command=target.stdio.command, args=target.stdio.args, env=target.stdio.env)
        async with stdio_client(server) as (read, write), ClientSession(read, write, timeout) as session:
            report(await play(session))
    elif target.http:
        async with (
            httpx.AsyncClient(headers=target.http.headers, timeout=TIMEOUT_SECONDS) as http,
            streamable_http_client(target.http.url, http_client=http) as (read, write, _),
            ClientSession(read, write, timeout) as session,
        ):
            report(await play(session))


if __name__ == "__main__":
    asyncio.run(main())
