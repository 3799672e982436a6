"""`/healthz`: whether this process reaches what it depends on (the store; Redis when shared), without
naming their addresses, which only the operator's log shows."""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from sqlalchemy import text

from occusim.server import Store

from ._counters import Counters

log = logging.getLogger("occusim.server")

# A check that takes longer counts as unavailable: a health probe must answer within its own timeout.
CHECK_SECONDS = 3.0
Reachable = Literal["ok", "unavailable"]


async def dependencies(store: Store, counters: Counters, *, shared_counters: bool) -> dict[str, Reachable]:
    """`store` and, when the counters are shared, `redis`: "ok" or "unavailable" (the cause is logged)."""
    checks = {"store": _ping_store(store)}
    if shared_counters:
        checks["redis"] = counters.ping()
    names = list(checks)
    outcomes = await asyncio.gather(*(asyncio.wait_for(check, CHECK_SECONDS) for check in checks.values()),
                                    return_exceptions=True)
    found: dict[str, Reachable] = {}
    for name, outcome in zip(names, outcomes, strict=True):
        if isinstance(outcome, BaseException):
            log.warning("health check: %s unavailable: %s", name, f"{type(outcome).__name__}: {outcome}")
            found[name] = "unavailable"
        else:
            found[name] = "ok"
    return found


async def _ping_store(store: Store) -> None:
    await store.run_read(lambda connection: connection.execute(text("SELECT 1")).scalar())
