"""A bare MCP SDK server for bench_hosted_vs_sdk.py: one `get_patient` tool that sleeps 0.5 s, over
streamable HTTP with uvicorn on the port given. Usage: python _bare_sdk_server.py PORT

The tool offers the same contract as the triage scenario's `get_patient`, written the way an SDK user
would: a patient id matching `^P[0-9]+$` in, a typed record out (id, name and a priority from 1 to 5
required; notes and ward optional), so that clients list and check the same shapes on both sides.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Annotated

import uvicorn
from mcp.server import MCPServer
from pydantic import BaseModel, Field

server = MCPServer("bare")


class Patient(BaseModel):
    id: str
    name: str
    priority: int = Field(ge=1, le=5)
    notes: str | None = None
    ward: str | None = None


@server.tool()
async def get_patient(patient_id: Annotated[str, Field(pattern="^P[0-9]+$")]) -> Patient:
    """Read one patient's record, after the latency a world model would take."""
    await asyncio.sleep(0.5)
    return Patient(id=patient_id, name="Ben Okafor", priority=4, notes="sprained ankle", ward="B")


if __name__ == "__main__":
    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
