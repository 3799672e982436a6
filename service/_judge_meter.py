"""`POST /v1/judge` in the hosted service, metered like the episodes: its model calls count against the
tenant's per-minute limit, its spend is held against the daily cap while it runs, and its cost is counted."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

from fastapi import Request

from occusim.judge import JudgeMeter, Verdict

from ._http_api import Hosted, tenant_limits_answered


def judge_meter(hosted: Hosted) -> JudgeMeter:
    limits = hosted.limits

    @contextlib.asynccontextmanager
    async def metered(request: Request, model_calls: int) -> AsyncIterator[Callable[[Verdict], Awaitable[None]]]:
        tenant = await hosted.caller(request)

        async def spent(verdict: Verdict) -> None:
            await limits.record_spend(tenant, verdict.usage.cost_usd)

        async with contextlib.AsyncExitStack() as stack:
            with tenant_limits_answered():
                # Held first: a request refused for its spend is not counted as calls.
                await stack.enter_async_context(limits.holding_spend(tenant))
                await limits.admit_tool_calls(tenant, model_calls)
            yield spent

    return metered
