"""langchain-mcp-adapters' default use, `MultiServerMCPClient.get_tools()`: every call opens its own connection.

Over stdio each connection is a new `occusim serve` process, so each call lands in a new episode; the
interop suite plays this to show the hazard docs/mcp-clients.md warns about.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from client_langchain import play
from episode_wire import TIMEOUT_SECONDS, read_target, report
from langchain_mcp_adapters.client import MultiServerMCPClient


async def main() -> None:
    stdio = read_target().stdio
    assert stdio, "this shows a stdio hazard"
    client = MultiServerMCPClient({"occusim": {
        "transport": "stdio", "command": stdio.command, "args": stdio.args, "env": stdio.env,
        "session_kwargs": {"read_timeout_seconds": timedelta(seconds=TIMEOUT_SECONDS)}}})
    report(await play({tool.name: tool for tool in await client.get_tools()}))


if __name__ == "__main__":
    asyncio.run(main())
