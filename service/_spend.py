"""Model spend held before each call and settled after: a tenant's calls in flight can never pass its daily
cap together, whatever their number and however many replicas run them."""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator

from occusim.server import SpendLimitError

from ._counters import Counters, CountersUnavailableError

# A tenant's held amount lapses this long after it last changed: what a replica killed mid-call held is
# given back then. Longer than any model call the service waits for.
HOLD_SECONDS = 900.0
_EPSILON = 1e-9


class SpendHolds:
    """Holds an estimate of each model call's cost against the tenant's cap while the call runs.

    The estimate is the largest cost of one model call this process has counted; before it has counted
    any, a call holds the whole cap, so a tenant's first calls run one at a time until a cost is known.
    A call alone in flight may always start while the spend is under the cap (it may pass it by its own
    cost, as one call always could); calls in flight together never hold more than the cap leaves.
    """

    def __init__(self, counters: Counters) -> None:
        self.counters = counters
        self.largest_call_usd = 0.0

    def learn(self, cost_usd: float) -> None:
        self.largest_call_usd = max(self.largest_call_usd, cost_usd)

    @contextlib.asynccontextmanager
    async def holding(self, tenant: str, *, cap: float, spent_key: str, retry_after: float) -> AsyncIterator[None]:
        """Hold while the call runs and its cost is counted; raises SpendLimitError when it may not start."""
        amount = self.largest_call_usd or cap or _EPSILON
        key = f"held:{tenant}"
        held = await self.counters.add(key, amount, ttl=HOLD_SECONDS)
        try:
            spent = await self.counters.value(spent_key)
            others = held - amount
            if spent >= cap or (others > _EPSILON and spent + held > cap + _EPSILON):
                raise SpendLimitError(
                    f"tenant {tenant!r} spent ${spent:.4f} on models today (UTC) and holds ${max(others, 0):.4f} "
                    f"for calls in flight; its limit is ${cap:.4f}. "
                    + ("It resets at 00:00 UTC." if spent >= cap else "Retry once those calls have finished."),
                    max(1, math.ceil(retry_after if spent >= cap else 1)),
                )
            yield
        finally:
            with contextlib.suppress(CountersUnavailableError):  # the hold lapses with the counter
                await self.counters.add(key, -amount, ttl=HOLD_SECONDS)
