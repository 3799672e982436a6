"""Per-tenant limits of the hosted service: open episodes, tool calls per minute, model spend per day.

Counts live in `Counters` (Redis across replicas, memory on one); open episodes are counted in the store.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import AsyncIterator, Mapping

from occusim.environments import OccusimError
from occusim.server import Store

from ._api_models import TenantLimits, TenantUsage
from ._counters import Counters, CountersUnavailableError
from ._spend import SpendHolds

log = logging.getLogger("occusim.server")

MINUTE, DAY = 60.0, 86_400.0
# Open episodes free up as they are submitted or expire; a client asked to wait tries again after this.
OPEN_EPISODES_RETRY_SECONDS = 30
# The count of a tenant's creations in flight lapses this long after it starts, so that a replica killed
# mid-creation holds no place for longer.
OPENING_SECONDS = 60.0


class TenantLimitError(OccusimError):
    """A tenant reached one of its limits: answered 429 with `retry_after` seconds."""

    def __init__(self, kind: str, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = max(1, math.ceil(retry_after))


class TenantLimiter:
    """Checks and counts what each tenant consumes. A tenant without a limit is counted but never refused."""

    def __init__(self, counters: Counters, store: Store, *, defaults: TenantLimits | None = None,
                 tenants: Mapping[str, TenantLimits] | None = None) -> None:
        self.counters = counters
        self.store = store
        self.defaults = defaults or TenantLimits()
        self.tenants = dict(tenants or {})
        self.holds = SpendHolds(counters)

    def limits(self, tenant: str | None) -> TenantLimits:
        """The tenant's own limits where set, else the defaults (no limit at all without auth)."""
        if tenant is None:
            return TenantLimits()
        own = self.tenants.get(tenant)
        if own is None:
            return self.defaults
        return self.defaults.model_copy(update=own.model_dump(exclude_unset=True))

    @contextlib.asynccontextmanager
    async def opening_episode(self, tenant: str | None) -> AsyncIterator[None]:
        """Hold while creating an episode: refuses with TenantLimitError past the open-episode or cost limit.

        Each creation first takes a place among the tenant's creations in flight (a shared counter), then
        counts the open episodes in the store: the two together can never let more episodes open than the
        limit, even when replicas create at once, and creations never wait on each other. Near the limit,
        concurrent creations may be refused where one of them would have fit; they are told to retry.
        """
        limits = self.limits(tenant)
        if tenant is None:
            yield
            return
        await self._check_spend(tenant, limits)
        if limits.open_episodes is None:
            yield
            return
        key = f"opening:{tenant}"
        opening = await self.counters.add(key, 1, ttl=OPENING_SECONDS)
        try:
            open_now = await self.store.count_episodes(status="open", tenant=tenant)
            if open_now + max(opening, 1) > limits.open_episodes:
                raise TenantLimitError(
                    "open_episode_limit",
                    f"tenant {tenant!r} has {open_now} open episodes and {max(opening, 1) - 1:.0f} more being "
                    f"created, its limit is {limits.open_episodes}; submit one (or let one expire) and retry",
                    OPEN_EPISODES_RETRY_SECONDS,
                )
            yield
        finally:
            with contextlib.suppress(CountersUnavailableError):  # the place lapses with the counter
                await self.counters.add(key, -1, ttl=OPENING_SECONDS)

    async def admit_tool_calls(self, tenant: str | None, calls: int) -> None:
        """Count `calls` tool calls of the tenant, or refuse them all with TenantLimitError."""
        if tenant is None or calls <= 0:
            return
        limits = self.limits(tenant)
        await self._check_spend(tenant, limits)
        key = _minute_key(tenant)
        try:
            total = await self.counters.add(key, calls, ttl=2 * MINUTE)
        except CountersUnavailableError as error:
            if limits.tool_calls_per_minute is not None:
                raise
            # Only counted for GET /v1/usage: the call goes ahead uncounted.
            log.warning("tool calls of tenant %r not counted: %s", tenant, error)
            return
        if limits.tool_calls_per_minute is not None and total > limits.tool_calls_per_minute:
            await self.counters.add(key, -calls, ttl=2 * MINUTE)  # refused calls do not count
            raise TenantLimitError(
                "tool_call_rate_limit",
                f"tenant {tenant!r} made {limits.tool_calls_per_minute} tool calls this minute, its limit",
                _seconds_left(MINUTE),
            )

    @contextlib.asynccontextmanager
    async def holding_spend(self, tenant: str | None) -> AsyncIterator[None]:
        """Hold around one model call and the counting of its cost; SpendLimitError when it may not start."""
        cap = self.limits(tenant).cost_per_day_usd
        if tenant is None or cap is None:
            yield
            return
        async with self.holds.holding(tenant, cap=cap, spent_key=_day_key(tenant), retry_after=_seconds_left(DAY)):
            yield

    async def record_spend(self, tenant: str | None, cost_usd: float | None) -> None:
        """Add a model call's cost to the tenant's spend today. A counter that cannot be reached is logged."""
        if not cost_usd or cost_usd <= 0:
            return
        self.holds.learn(cost_usd)
        if tenant is None:
            return
        try:
            await self.counters.add(_day_key(tenant), cost_usd, ttl=2 * DAY)
        except CountersUnavailableError as error:
            log.warning("spend of tenant %r not counted: %s", tenant, error)

    async def usage(self, tenant: str | None) -> TenantUsage:
        open_now = await self.store.count_episodes(status="open", tenant=tenant)
        calls = await self.counters.value(_minute_key(tenant)) if tenant is not None else 0.0
        spent = await self.counters.value(_day_key(tenant)) if tenant is not None else 0.0
        return TenantUsage(
            tenant=tenant, open_episodes=open_now, tool_calls_this_minute=round(calls), cost_today_usd=spent,
            limits=self.limits(tenant), minute_resets_in_seconds=round(_seconds_left(MINUTE), 3),
            day_resets_in_seconds=round(_seconds_left(DAY), 3),
        )

    async def _check_spend(self, tenant: str, limits: TenantLimits) -> None:
        if limits.cost_per_day_usd is None:
            return
        spent = await self.counters.value(_day_key(tenant))
        if spent >= limits.cost_per_day_usd:
            raise TenantLimitError(
                "daily_cost_limit",
                f"tenant {tenant!r} spent ${spent:.4f} on models today (UTC), its limit is "
                f"${limits.cost_per_day_usd:.4f}; it resets at 00:00 UTC",
                _seconds_left(DAY),
            )


def _window(length: float) -> int:
    return int(time.time() // length)


def _seconds_left(length: float) -> float:
    return length - time.time() % length


def _minute_key(tenant: str) -> str:
    return f"calls:{tenant}:{_window(MINUTE)}"


def _day_key(tenant: str) -> str:
    return f"cost:{tenant}:{_window(DAY)}"
