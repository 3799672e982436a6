"""A bare MCP SDK server for bench_hosted_vs_sdk.py: one `get_patient` tool that sleeps 0.5 s, over
streamable HTTP with uvicorn on the port given. Usage: python _bare_sdk_server.py PORT"""

from __future__ import annotations

import asyncio
import sys

import uvicorn
from mcp.server import MCPServer

server = MCPServer("bare")


@server.tool()
async def get_patient(patient_id: str) -> dict[str, object]:
    """A patient's record, after the latency a world model would take."""
    await asyncio.sleep(0.5)
    return {"id": patient_id, "name": "Ben Okafor", "priority": 4, "notes": "sprained ankle", "ward": "B"}


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
