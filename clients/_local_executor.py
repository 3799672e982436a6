"""The in-process executor: `concurrency` episodes at once on this process's event loop (`--workers 1`)."""

from __future__ import annotations

import asyncio

from ._executor import EpisodeRunner, WorkPlan


class LocalExecutor:
    """Runs the plan with `concurrency` coroutines on the running event loop, through `runner`."""

    def __init__(self, runner: EpisodeRunner, concurrency: int) -> None:
        self.runner = runner
        self.concurrency = concurrency

    async def run(self, plan: WorkPlan) -> None:
        async def worker() -> None:
            while (combo := plan.take()) is not None:
                await plan.finish(await self.runner.run_combination(combo))

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.concurrency, plan.total)):
                group.create_task(worker())
