"""One episode with inspect_ai's `mcp_server_stdio` and `mcp_server_http`, inside one `mcp_connection`.

Inside the connection the tools share one session; outside it, each call opens its own connection,
which over stdio starts a new episode each time.
"""

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
from inspect_ai.tool import ContentText, ToolDef, ToolError, mcp_connection, mcp_server_http, mcp_server_stdio


async def main() -> None:
    target = read_target()
    if target.stdio:
        server = mcp_server_stdio(command=target.stdio.command, args=target.stdio.args, env=target.stdio.env)
    else:
        assert target.http
        server = mcp_server_http(url=target.http.url, headers=target.http.headers, timeout=TIMEOUT_SECONDS)
    async with mcp_connection([server]):
        tools = {ToolDef(tool).name: tool for tool in await server.tools()}
        results = []
        for name, arguments in EPISODE_CALLS:
            # An is_error result reaches the model as a ToolError carrying the result's text.
            try:
                content = await tools[name](**arguments)
            except ToolError as error:
                results.append(ToolResult(tool=name, is_error=True, content=parsed(error.message)))
                continue
            text = "".join(part.text for part in content if isinstance(part, ContentText)) \
                if isinstance(content, list) else str(content)
            results.append(ToolResult(tool=name, is_error=False, content=parsed(text)))
    report(EpisodeReport(client=f"inspect-ai {version('inspect-ai')}", tools=list(tools), results=results))


if __name__ == "__main__":
    asyncio.run(main())
