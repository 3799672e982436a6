"""langchain-mcp-adapters' default use, `MultiServerMCPClient.get_tools()`: every call opens its own connection.

Over stdio each connection is a new `occusim serve` process, so each call lands in a new episode; the
interop suite plays this to show the hazard docs/mcp-clients.md warns about.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from importlib.metadata import version
from typing import Any

from client_langchain import result
from episode_wire import (
    ANSWER,
    CALL,
    INVALID_CALL,
    SUBMIT,
    TIMEOUT_SECONDS,
    EpisodeReport,
    read_target,
    report,
)
from langchain_mcp_adapters.client import MultiServerMCPClient


async def main() -> None:
    stdio = read_target().stdio
    assert stdio, "this shows a stdio hazard"
    client = MultiServerMCPClient({"occusim": {
        "transport": "stdio", "command": stdio.command, "args": stdio.args, "env": stdio.env,
        "session_kwargs": {"read_timeout_seconds": timedelta(seconds=TIMEOUT_SECONDS)}}})
    tools = {tool.name: tool for tool in await client.get_tools()}
    results = []
    calls: list[tuple[str, dict[str, Any]]] = [CALL, INVALID_CALL, (SUBMIT, {"answer": ANSWER})]
    for index, (name, arguments) in enumerate(calls):
        call = {"type": "tool_call", "id": f"call-{index}", "name": name, "args": arguments}
        results.append(result(name, await tools[name].ainvoke(call)))
    report(EpisodeReport(client=f"langchain-mcp-adapters {version('langchain-mcp-adapters')}", tools=list(tools),
                         results=results))


if __name__ == "__main__":
    asyncio.run(main())
