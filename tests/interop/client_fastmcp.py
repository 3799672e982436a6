"""One episode with FastMCP's `Client` (StdioTransport, StreamableHttpTransport with the bearer header)."""

from __future__ import annotations

import asyncio
from importlib.metadata import version

from episode_wire import (
    EPISODE_CALLS,
    TIMEOUT_SECONDS,
    EpisodeReport,
    ToolResult,
    parsed,
    read_target,
    report,
)
from fastmcp import Client
from fastmcp.client.transports import ClientTransport, StdioTransport, StreamableHttpTransport
from mcp.types import TextContent


async def main() -> None:
    target = read_target()
    transport: ClientTransport
    if target.stdio:
        transport = StdioTransport(command=target.stdio.command, args=target.stdio.args, env=target.stdio.env)
    else:
        assert target.http
        transport = StreamableHttpTransport(target.http.url, headers=target.http.headers)
    async with Client(transport, timeout=TIMEOUT_SECONDS) as client:
        tools = await client.list_tools()
        results = []
        for tool, arguments in EPISODE_CALLS:
            # raise_on_error=False: the is_error result itself, not FastMCP's ToolError.
            answer = await client.call_tool(tool, arguments, raise_on_error=False)
            text = "".join(part.text for part in answer.content if isinstance(part, TextContent))
            content = answer.structured_content if answer.structured_content is not None else parsed(text)
            results.append(ToolResult(tool=tool, is_error=answer.is_error, content=content))
    report(EpisodeReport(client=f"fastmcp {version('fastmcp')}", tools=[t.name for t in tools],
                         results=results))


if __name__ == "__main__":
    asyncio.run(main())
