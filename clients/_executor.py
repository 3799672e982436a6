"""What the batch driver asks of an executor: run the combinations a `WorkPlan` hands out, give back rows."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from occusim.analysis import Combination, ResultRow

from ._budget import CostBudget

log = logging.getLogger("occusim.clients")


class EpisodeRunner(Protocol):
    """Runs one combination to its row, retrying infrastructure failures itself; never raises for a bad episode."""

    async def run_combination(self, combo: Combination) -> ResultRow: ...


class Executor(Protocol):
    """Runs a plan's combinations (in this process, in worker processes, on a Ray cluster) until it is done."""

    async def run(self, plan: WorkPlan) -> None: ...


# Opens an episode runner (store, transport, catalog) in a worker from its spec; a module-level function, so
# that worker processes and Ray actors receive it by reference.
RunnerFactory = Callable[[str], AbstractAsyncContextManager[EpisodeRunner]]


class WorkPlan:
    """The driver's side of a batch: hands out combinations, records each finished row once, and stops
    handing out work when the cost cap is reached.

    A combination whose worker was lost (a killed process, a dead Ray actor) is handed out again, like any
    infrastructure failure, up to `retries` times; after that it is recorded by `lost_row` as an infra_error.
    """

    def __init__(self, work: list[Combination], *, record: Callable[[ResultRow], Awaitable[None]],
                 lost_row: Callable[[Combination, int, str], ResultRow], retries: int,
                 budget: CostBudget | None = None) -> None:
        self.total = len(work)
        self._pending = deque(work)
        self._record = record
        self._lost_row = lost_row
        self._retries = retries
        self.budget = budget
        self._lost: dict[tuple[str, str, int], int] = {}
        self._out: set[tuple[str, str, int]] = set()
        self.rows: list[ResultRow] = []
        # The first configuration error (the setting to check): no further combination is handed out.
        self.stopped_by: ResultRow | None = None

    def take(self) -> Combination | None:
        """The next combination to run, or None when none is left, the cost cap is reached or a configuration
        error stopped the run."""
        if not self._pending or self._halted:
            return None
        combo = self._pending.popleft()
        self._out.add(combo.key)
        return combo

    @property
    def in_flight(self) -> int:
        return len(self._out)

    @property
    def finished(self) -> bool:
        """Nothing runs and nothing more will be handed out."""
        return not self._out and (not self._pending or self._halted)

    @property
    def _halted(self) -> bool:
        return self.stopped_by is not None or (self.budget is not None and self.budget.spent_out)

    @property
    def unscheduled(self) -> int:
        """Combinations never handed out (left for a later run once the cost cap or a configuration error
        stopped this one)."""
        return len(self._pending)

    async def finish(self, row: ResultRow) -> None:
        """Record the row of a combination that was handed out; a second row for it is dropped."""
        if row.key not in self._out:
            log.warning("dropped a second row for %s/%s/trial %d", *row.key)
            return
        self._out.discard(row.key)
        lost = self._lost.get(row.key, 0)
        if lost:
            row = row.model_copy(update={"attempts": row.attempts + lost})
        if self.budget is not None:
            self.budget.add(row)
        if row.configuration_error is not None and self.stopped_by is None:
            self.stopped_by = row
        self.rows.append(row)
        await self._record(row)

    async def lost(self, combo: Combination, why: str) -> None:
        """The worker running `combo` is gone: hand it out again, or record it as an infra_error."""
        if combo.key not in self._out:
            return
        self._out.discard(combo.key)
        attempts = self._lost[combo.key] = self._lost.get(combo.key, 0) + 1
        if attempts <= self._retries:
            log.warning("episode %s/%s/trial %d lost (%s); running it again", *combo.key, why)
            self._pending.appendleft(combo)
            return
        self._out.add(combo.key)
        row = self._lost_row(combo, attempts, why)
        self._lost.pop(combo.key, None)
        await self.finish(row)
