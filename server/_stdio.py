"""One episode served over stdio: stdout carries only MCP messages, everything else goes to stderr."""

from __future__ import annotations

import logging
import os
import sys
from typing import TextIO

import anyio
from mcp.server.stdio import stdio_server

from occusim.environments import EpisodeRecord, FaultSettings, SimulationMode

from ._episodes import EpisodeService
from ._judging import BackgroundJudging
from ._mcp_server import build_mcp_server
from ._stdin import interruptible_stdin

log = logging.getLogger("occusim.server")


async def serve_stdio(
    service: EpisodeService, task_id: str, *, world_model: str | None = None, faults: FaultSettings | None = None,
    mode: SimulationMode = "tracked", episode_id: str | None = None,
) -> EpisodeRecord:
    """Create an episode of `task_id` and serve it on stdin/stdout until the client disconnects.

    A submitted episode is judged in the background (when the service has a judge); the judgment is
    awaited before returning, so the record returned is final.
    """
    episode = await service.create(task_id, world_model=world_model, faults=faults, mode=mode, episode_id=episode_id)
    log.info(
        "episode %s of task %s (world model %s, faults %s, mode %s) is open on stdio",
        episode.id, task_id, episode.record.world_model, episode.record.faults.mode, mode,
    )
    judging = BackgroundJudging()
    server = build_mcp_server(episode, judging=judging)
    try:
        async with stdio_server(stdin=interruptible_stdin(), stdout=anyio.wrap_file(protocol_stdout())) as (
                read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await judging.drain()
    log.info("episode %s ended with status %s after %d steps", episode.id, episode.status, len(episode.record.steps))
    return episode.record


def protocol_stdout() -> TextIO:
    """Reserve stdout for MCP messages for the rest of the process.

    The protocol gets a private duplicate of fd 1, and fd 1 itself is pointed at stderr for good, so
    whatever else writes to stdout (libraries, logging handlers, even at interpreter exit) lands on stderr.
    """
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    return open(wire, "w", encoding="utf-8", newline="\n")  # noqa: SIM115 - owned by the transport
