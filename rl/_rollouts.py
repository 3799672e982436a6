"""Rollouts: occusim episodes driven synchronously, one MCP client each, for the RL adapters.

A `RolloutPool` loads the catalog once and runs an `EpisodeService` (the engine the batch runner drives) on
an event loop of its own thread, so that synchronous training code (Gymnasium's `step`, TRL's tool methods)
can open, step and submit episodes. Each `Rollout` speaks to its episode through the SDK's in-memory MCP
client, as the in-process batch runner does: its tools are the episode's `tools/list`, its results what any
MCP client reads, and `submit_result` closes it and waits for the judge's verdict.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from occusim.environments import Catalog, FaultMode, FaultSettings, OccusimError, SimulationMode

if TYPE_CHECKING:
    import mcp_types as types
    from mcp import Client

    from occusim.judge import Verdict
    from occusim.server import Episode, EpisodeService, Store

T = TypeVar("T")


class RolloutError(OccusimError):
    """A rollout was used out of order (a step before reset, after its end) or could not be opened."""


@dataclass(frozen=True)
class ToolResult:
    """One tool call's result as the policy reads it: the result's text and whether the server refused it."""

    text: str
    is_error: bool


class RolloutPool:
    """The tasks of one catalog, served as episodes by an engine on a background event loop.

    `sources` are catalog sources as `occusim run --source` takes them (the bundled catalog is always
    included unless `bundled` is False); `world_model` and `judge_model` are model strings (None: the
    roles' environment settings, as the command line resolves them). Without a judge model episodes
    are submitted but stay unjudged. `db` is the store (a SQLite path or URL; default: a file in a
    temporary folder removed on `close`). The catalog is loaded here, once: opening a rollout costs one
    store insert and an MCP handshake in memory.
    """

    def __init__(
        self,
        *,
        sources: Sequence[str | Path] = (),
        bundled: bool = True,
        world_model: str | None = None,
        judge_model: str | None = None,
        votes: int = 3,
        mode: SimulationMode = "tracked",
        db: str | Path | None = None,
        catalog: Catalog | None = None,
    ) -> None:
        from occusim.environments import load_catalog

        self.catalog = catalog if catalog is not None else load_catalog(list(sources), bundled=bundled)
        self.world_model = world_model
        self.judge_model = judge_model
        self.votes = votes
        self.mode: SimulationMode = mode
        self._folder = tempfile.TemporaryDirectory(prefix="occusim-rl-") if db is None else None
        self._db = str(db) if db is not None else str(Path(self._folder.name) / "episodes.db")  # type: ignore[union-attr]
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="occusim-rollouts", daemon=True)
        self._thread.start()
        self._closed = False
        self._store: Store | None = None
        self._service: EpisodeService | None = None

    def run(self, coroutine: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run `coroutine` on the pool's loop and wait for its result (from any thread but the loop's)."""
        if self._closed:
            coroutine.close()
            raise RolloutError("this rollout pool is closed")
        future: Future[T] = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        return future.result(timeout)

    async def service(self) -> EpisodeService:
        if self._service is None:
            from occusim.server import NATIVE, EpisodeService, Store

            self._store = Store(self._db)
            await self._store.init()
            self._service = EpisodeService(
                self.catalog,
                self._store,
                world_model=self.world_model,
                judge=NATIVE.judge_hook(self.judge_model, self.catalog, votes=self.votes),
            )
        return self._service

    def task_ids(self) -> list[str]:
        return list(self.catalog.tasks)

    def open(
        self,
        task_id: str,
        *,
        faults: FaultMode = "E0",
        seed: int = 0,
        fault_count: int = 2,
        fault_duration: int = 2,
    ) -> Rollout:
        """Open an episode of `task_id` and an MCP client to it; UnknownTaskError for a task not served."""
        self.catalog.task(task_id)
        settings = FaultSettings(mode=faults, count=fault_count, duration=fault_duration, seed=seed)
        rollout = Rollout(self)
        self.run(rollout.start(task_id, settings))
        return rollout

    def close(self) -> None:
        """End the loop and the store (open rollouts are abandoned); the pool is unusable afterwards."""
        if self._closed:
            return
        if self._store is not None:
            self.run(self._store.close())
        # What else runs on the loop (open rollouts' clients, litellm's logging worker) ends before the loop does.
        self.run(_cancel_other_tasks())
        self.run(self._loop.shutdown_asyncgens())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        if not self._thread.is_alive():
            self._loop.close()
        if self._folder is not None:
            self._folder.cleanup()


async def _cancel_other_tasks() -> None:
    current = asyncio.current_task()
    others = [task for task in asyncio.all_tasks() if task is not current]
    for task in others:
        task.cancel()
    await asyncio.gather(*others, return_exceptions=True)


class Rollout:
    """One episode, held open by an MCP client on the pool's loop until it is submitted or closed."""

    def __init__(self, pool: RolloutPool) -> None:
        self.pool = pool
        self.episode: Episode | None = None
        self.tools: list[types.Tool] = []
        self.brief = ""
        self._calls: (
            asyncio.Queue[tuple[Callable[[Client], Awaitable[Any]], asyncio.Future[Any]] | None] | None
        )
        self._calls = None
        self._driver: asyncio.Task[None] | None = None

    @property
    def id(self) -> str:
        return self._episode().id

    @property
    def done(self) -> bool:
        return self.episode is not None and self.episode.closed

    @property
    def verdict(self) -> Verdict | None:
        """The judge's verdict once the episode is submitted and judged; None before, or without a judge."""
        from occusim.judge import Verdict

        verdict = self.episode.verdict if self.episode is not None else None
        return verdict if isinstance(verdict, Verdict) else None

    @property
    def judge_error(self) -> str | None:
        return self.episode.judge_error if self.episode is not None else None

    def _episode(self) -> Episode:
        if self.episode is None:
            raise RolloutError("the rollout has no episode yet")
        return self.episode

    async def start(self, task_id: str, faults: FaultSettings) -> None:
        service = await self.pool.service()
        episode = await service.create(
            task_id, faults=faults, mode=self.pool.mode, episode_id=uuid.uuid4().hex
        )
        self.episode = episode
        self.brief = service.protocol.brief(episode)
        self._calls = asyncio.Queue()
        ready: asyncio.Future[list[types.Tool]] = asyncio.get_running_loop().create_future()
        self._driver = asyncio.create_task(self._drive(episode, ready))
        self.tools = await ready

    async def _drive(self, episode: Episode, ready: asyncio.Future[list[types.Tool]]) -> None:
        """Hold the episode's MCP client in one task (its task groups must be entered and left in the same
        one) and run the calls queued for it, until None is queued."""
        from occusim.clients import connect
        from occusim.server import build_mcp_server

        assert self._calls is not None
        try:
            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(connect(build_mcp_server(episode)))
                ready.set_result((await client.list_tools()).tools)
                while (item := await self._calls.get()) is not None:
                    call, answer = item
                    try:
                        answer.set_result(await call(client))
                    except Exception as error:
                        answer.set_exception(error)
        except Exception as error:
            if not ready.done():
                ready.set_exception(error)
            raise
        finally:
            if self.pool._service is not None:  # an episode left open would otherwise stay cached
                self.pool._service.forget(episode.id)

    async def _through_client(self, call: Callable[[Client], Awaitable[T]]) -> T:
        if self._calls is None or self._driver is None or self._driver.done():
            raise RolloutError("the rollout's MCP client is closed")
        answer: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        await self._calls.put((call, answer))
        return await answer

    def call(self, tool: str, arguments: dict[str, Any] | None = None) -> ToolResult:
        """Call one of the episode's tools; `submit_result` closes the episode and returns after judging."""
        from occusim.clients import result_text

        if self.done:
            raise RolloutError(f"episode {self.id} is closed ({self._episode().status}); reset for a new one")
        result = self.pool.run(self._through_client(lambda client: client.call_tool(tool, arguments or {})))
        return ToolResult(text=result_text(result), is_error=bool(result.is_error))

    def close(self) -> None:
        """Release the episode's MCP client (an unsubmitted episode stays open in the store)."""
        if self._calls is None or self._driver is None:
            return
        calls, driver = self._calls, self._driver
        self._calls = None

        async def stop() -> None:
            await calls.put(None)
            await driver

        self.pool.run(stop())

    @property
    def submitted(self) -> bool:
        return self.episode is not None and self.episode.record.final_answer is not None


def ascii_json(text: str) -> str:
    """`text` made ASCII-safe: JSON text re-encoded with escapes, other text escaped as a JSON string."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=True)
    except ValueError:
        return json.dumps(text, ensure_ascii=True)
