"""One episode with langchain-mcp-adapters: `MultiServerMCPClient.session()` and the tools `load_mcp_tools` makes.

The tools are loaded from one session, so all the calls go through one connection: the default
`get_tools()` opens a connection per call, which over stdio starts a new episode each time.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
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
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.sessions import Connection
from langchain_mcp_adapters.tools import load_mcp_tools


def result(tool: str, message: ToolMessage) -> ToolResult:
    # The model sees the text (an is_error result comes back as status "error"); the artifact keeps the
    # structured content.
    text = "".join(block["text"] for block in message.content if isinstance(block, dict) and "text" in block) \
        if isinstance(message.content, list) else message.content
    structured = (message.artifact or {}).get("structured_content")
    return ToolResult(tool=tool, is_error=message.status == "error",
                      content=structured if structured is not None else parsed(text))


async def play(tools: dict[str, BaseTool]) -> EpisodeReport:
    """The episode's calls through langchain tools, each invoked as a model's tool call would be."""
    results = []
    for index, (name, arguments) in enumerate(EPISODE_CALLS):
        call = {"type": "tool_call", "id": f"call-{index}", "name": name, "args": arguments}
        results.append(result(name, await tools[name].ainvoke(call)))
    return EpisodeReport(client=f"langchain-mcp-adapters {version('langchain-mcp-adapters')}", tools=list(tools),
                         results=results)


async def main() -> None:
    target = read_target()
    connection: Connection
    if target.stdio:
        connection = {"transport": "stdio", "command": target.stdio.command, "args": target.stdio.args,
                      "env": target.stdio.env,
                      "session_kwargs": {"read_timeout_seconds": timedelta(seconds=TIMEOUT_SECONDS)}}
    else:
        assert target.http
        connection = {"transport": "streamable_http", "url": target.http.url, "headers": target.http.headers,
                      "timeout": timedelta(seconds=TIMEOUT_SECONDS)}
    client = MultiServerMCPClient({"occusim": connection})
    async with client.session("occusim") as session:
        episode = await play({tool.name: tool for tool in await load_mcp_tools(session)})
    report(episode)


if __name__ == "__main__":
    asyncio.run(main())
