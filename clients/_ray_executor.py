"""`--executor ray`: the combinations spread over Ray actors on every node of a Ray cluster.

Each actor is an asyncio loop running its share of `--concurrency`, with the run's settings and the driver's
model variables sent to it, writing episodes to the run's store. The driver alone writes results.jsonl; an
actor that dies has its combinations handed out again (`WorkPlan.lost`) while Ray restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from typing import Any

from occusim.analysis import Combination, ResultRow, RunError

from ._executor import EpisodeRunner, RunnerFactory, WorkPlan
from ._process_executor import shares
from ._worker_spec import WorkerSpec

log = logging.getLogger("occusim.clients")

# Times Ray restarts a dead actor before the driver does without it.
_ACTOR_RESTARTS = 3
# Seconds the driver waits for a restarted actor to answer before it asks again.
_PROBE_TIMEOUT = 120.0
ACTOR_PREFIX = "occusim-worker"


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RunError("--executor ray needs Ray: pip install 'occusim[ray]'") from None
    return ray


class EpisodeActor:
    """A Ray actor running the combinations it is sent, concurrently, through one runner it opens on first use."""

    def __init__(self, factory: RunnerFactory, spec_json: str) -> None:
        spec = WorkerSpec.model_validate_json(spec_json)
        spec.apply()
        self._db = spec.db
        self._factory = factory
        self._spec_json = spec_json
        self._stack = contextlib.AsyncExitStack()
        self._runner: EpisodeRunner | None = None
        self._opening = asyncio.Lock()

    async def _opened(self) -> EpisodeRunner:
        async with self._opening:
            if self._runner is None:
                _check_store_reachable(self._db)
                self._runner = await self._stack.enter_async_context(self._factory(self._spec_json))
        return self._runner

    async def run(self, combo_json: str) -> str:
        runner = await self._opened()
        row = await runner.run_combination(Combination.model_validate_json(combo_json))
        return row.model_dump_json()

    async def pid(self) -> int:
        return os.getpid()

    async def close(self) -> None:
        await self._stack.aclose()


def _check_store_reachable(db: str) -> None:
    """A SQLite store must be the driver's file, not a new one on another node's disk."""
    prefix = "sqlite+aiosqlite:///"
    if db.startswith(prefix):
        path = db.removeprefix(prefix)
        if path and path != ":memory:" and not os.path.exists(path):
            raise RunError(f"the store {path} is not on this Ray node ({os.uname().nodename}); a cluster of several "
                           "machines needs a store they all reach: --db postgresql+asyncpg://...")


class RayExecutor:
    """Runs a plan over Ray actors: `workers` of them, or one per CPU of the cluster when None."""

    def __init__(self, factory: RunnerFactory, spec: WorkerSpec, *, workers: int | None, concurrency: int,
                 address: str | None) -> None:
        self.factory = factory
        self.spec = spec
        self.workers = workers
        self.concurrency = concurrency
        self.address = address

    async def run(self, plan: WorkPlan) -> None:
        ray = _ray()
        started = not ray.is_initialized()
        if started:
            ray.init(address=self.address, log_to_driver=False)
        try:
            await self._run(ray, plan)
        finally:
            if started:
                ray.shutdown()

    async def _run(self, ray: Any, plan: WorkPlan) -> None:
        workers = self.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        capacities = shares(self.concurrency, min(workers, plan.total))
        remote = ray.remote(num_cpus=1, max_restarts=_ACTOR_RESTARTS, max_task_retries=0)(EpisodeActor)
        run_id = uuid.uuid4().hex[:8]
        spec_json = self.spec.model_dump_json()
        actors = [remote.options(name=f"{ACTOR_PREFIX}-{run_id}-{index}",
                                 runtime_env={"env_vars": self.spec.environment}).remote(self.factory, spec_json)
                  for index in range(len(capacities))]
        held: list[int] = [0] * len(actors)
        healthy: set[int] = set(range(len(actors)))
        running: dict[asyncio.Future[Any], tuple[int, Combination]] = {}
        probes: dict[asyncio.Future[Any], int] = {}
        try:
            while not plan.finished:
                for index in sorted(healthy):
                    while held[index] < capacities[index] and (combo := plan.take()) is not None:
                        future = asyncio.wrap_future(actors[index].run.remote(combo.model_dump_json()).future())
                        running[future] = (index, combo)
                        held[index] += 1
                if not running and not probes:
                    raise RunError("every Ray worker is gone; the rows written so far are kept: run again to resume")
                done, _ = await asyncio.wait([*running, *probes], return_when=asyncio.FIRST_COMPLETED)
                for future in done:
                    if future in probes:
                        index = probes.pop(future)
                        if future.exception() is None:
                            healthy.add(index)
                        elif isinstance(future.exception(), TimeoutError):
                            probes[self._probe(actors[index])] = index
                        else:
                            log.warning("Ray worker %d is gone for good: %s", index, future.exception())
                        continue
                    index, combo = running.pop(future)
                    held[index] -= 1
                    error = future.exception()
                    if error is None:
                        await plan.finish(ResultRow.model_validate_json(future.result()))
                    elif isinstance(error, ray.exceptions.RayTaskError):
                        raise RunError(f"Ray worker {index} failed: {error.cause or error}")
                    elif isinstance(error, ray.exceptions.RayError):
                        await plan.lost(combo, f"Ray worker {index}: {type(error).__name__}")
                        if index in healthy:
                            healthy.discard(index)
                            probes[self._probe(actors[index])] = index
                    else:
                        raise error
        finally:
            for future in [*running, *probes]:
                future.cancel()
            await self._close(ray, actors)

    @staticmethod
    def _probe(actor: Any) -> asyncio.Future[Any]:
        """Completes once the actor (restarted by Ray, if it died) answers again; TimeoutError if it is slow."""
        answer = asyncio.wrap_future(actor.pid.remote().future())
        return asyncio.ensure_future(asyncio.wait_for(answer, _PROBE_TIMEOUT))

    @staticmethod
    async def _close(ray: Any, actors: list[Any]) -> None:
        closing = [asyncio.wrap_future(actor.close.remote().future()) for actor in actors]
        await asyncio.wait(closing, timeout=30)
        for actor in actors:
            ray.kill(actor, no_restart=True)
