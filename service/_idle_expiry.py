"""The loop that expires open episodes left without a step, for the hosted service and the OpenEnv server."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sized

import anyio

from occusim.server import EpisodeService

log = logging.getLogger("occusim.server")


async def expire_idle_forever(
    service: EpisodeService,
    idle_seconds: float,
    every_seconds: float,
    release: Callable[[list[str]], Sized] | None = None,
) -> None:
    """Every `every_seconds`, expire the open episodes idle for `idle_seconds`; `release` is then given their
    ids and returns the MCP endpoints it let go. A store hiccup is logged and the next round retries."""
    while True:
        await anyio.sleep(every_seconds)
        try:
            expired = await service.expire_idle(idle_seconds)
        except Exception:  # a store hiccup must not end the loop; the next round retries
            log.exception("expiring idle episodes failed")
            continue
        released = len(release(expired)) if release is not None else 0
        if expired or released:
            log.info("expired %d idle episode(s); released %d MCP endpoint(s)", len(expired), released)
