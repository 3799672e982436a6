"""Open one episode of a batch and an MCP client to it: in-process, over stdio, or over a local HTTP service."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import socket
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from mcp import Client
from pydantic import ValidationError

from occusim.environments import Catalog, EpisodeRecord, FaultSettings, SimulationMode, Task
from occusim.rest import ErrorBody
from occusim.server import NATIVE, EpisodeService, SimulationProtocol, Store, build_mcp_server
from occusim.service import CreateEpisodeRequest, CreateEpisodeResponse, ServiceSettings

from ._mcp_connect import connect, stdio_command

if TYPE_CHECKING:
    import httpx
    import uvicorn


class EpisodeTransport(Protocol):
    """Creates an episode of a task and yields an MCP client connected to it, with the episode's id."""

    name: str

    def episode(self, task: Task, faults: FaultSettings, episode_id: str) -> AbstractAsyncContextManager[
            tuple[Client, str]]: ...

    def closed_record(self, episode_id: str) -> EpisodeRecord | None:
        """The record of a closed episode this transport served, as committed, once, where this process holds
        it; None: read it from the store."""
        ...

    async def close(self) -> None: ...


class InProcessTransport:
    """Episodes of an EpisodeService in this process, spoken to through the SDK's in-memory MCP client."""

    name = "inprocess"

    def __init__(self, catalog: Catalog, store: Store, *, world_model: str, protocol: SimulationProtocol = NATIVE,
                 mode: SimulationMode = "tracked", read_timeout: float | None = None) -> None:
        self.service = EpisodeService(catalog, store, world_model=world_model, protocol=protocol)
        self.mode = mode
        self.read_timeout = read_timeout
        # Closed episodes' records, until the runner takes them: the copy in memory is the committed one (an
        # episode adds a step or closes only once the store has), so the runner need not read it back.
        self._closed: dict[str, EpisodeRecord] = {}

    @asynccontextmanager
    async def episode(self, task: Task, faults: FaultSettings, episode_id: str) -> AsyncIterator[tuple[Client, str]]:
        episode = await self.service.create(task.id, faults=faults, mode=self.mode, episode_id=episode_id)
        finished = False
        try:
            async with connect(build_mcp_server(episode), read_timeout_seconds=self.read_timeout) as client:
                yield client, episode.id
            finished = True
        finally:
            # An episode left open (the agent failed) would otherwise stay cached in memory.
            self.service.forget(episode.id)
            # Kept only for a runner that goes on to read it (not one that failed inside).
            if finished and episode.closed and not self.service.store.shared:
                self._closed[episode.id] = episode.record

    def closed_record(self, episode_id: str) -> EpisodeRecord | None:
        return self._closed.pop(episode_id, None)

    async def close(self) -> None:
        self._closed.clear()


class StdioTransport:
    """Each episode served by its own `occusim serve TASK_ID` subprocess, sharing the run's store."""

    name = "stdio"

    def __init__(self, *, db: str, world_model: str, sources: list[str], protocol: SimulationProtocol = NATIVE,
                 mode: SimulationMode = "tracked", cache: bool = True, read_timeout: float | None = None) -> None:
        self.db = db
        self.protocol = protocol
        self.world_model = world_model
        self.sources = sources
        self.mode = mode
        self.cache = cache
        self.read_timeout = read_timeout

    def command(self, task: Task, faults: FaultSettings, episode_id: str) -> list[str]:
        command = [
            sys.executable, "-m", "occusim", "serve", task.id, "--db", self.db, "--world-model", self.world_model,
            "--faults", faults.mode, "--fault-count", str(faults.count), "--fault-duration", str(faults.duration),
            "--seed", str(faults.seed), "--episode-id", episode_id, "--log-level", "warning",
            *(["--fault-window", str(faults.window)] if faults.window is not None else []),
        ]
        command += self.protocol.serve_arguments(self.mode)
        for source in self.sources:
            command += ["--source", source]
        if not self.cache:
            command.append("--no-cache")
        return command

    @asynccontextmanager
    async def episode(self, task: Task, faults: FaultSettings, episode_id: str) -> AsyncIterator[tuple[Client, str]]:
        parameters = stdio_command(self.command(task, faults, episode_id))
        async with connect(parameters, read_timeout_seconds=self.read_timeout) as client:
            yield client, episode_id

    def closed_record(self, episode_id: str) -> EpisodeRecord | None:
        return None  # served by another process

    async def close(self) -> None:
        return None


class HttpTransport:
    """Episodes of the hosted service (`occusim serve --http`), run by this process on a free loopback port.

    Each episode is created with `POST /v1/episodes` under a one-off API key and driven over streamable
    HTTP with the episode's own token, exactly as a remote client would.
    """

    name = "http"

    def __init__(self, catalog: Catalog, store: Store, *, world_model: str, protocol: SimulationProtocol = NATIVE,
                 mode: SimulationMode = "tracked", read_timeout: float | None = None,
                 sources: list[str] | None = None) -> None:
        self.catalog = catalog
        self.protocol = protocol
        self.sources = sources or []
        self.store = store
        self.world_model = world_model
        self.mode = mode
        self.read_timeout = read_timeout
        self.base_url = ""
        self._api_key = secrets.token_urlsafe(24)
        self._server: uvicorn.Server | None = None
        self._serving: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> HttpTransport:
        import httpx
        import uvicorn

        from occusim.service import create_app  # the hosted app, loaded only for this transport

        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        settings = ServiceSettings(
            host="127.0.0.1", port=port, db=self.store.url, api_keys={"batch": self._api_key},
            world_model=self.world_model, token_secret=secrets.token_urlsafe(32), sources=self.sources,
            protocol=self.protocol.name,
        )
        app = create_app(settings, catalog=self.catalog, store=self.store, protocol=self.protocol)
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
        self._server = server = _embedded_server(uvicorn.Server)(config)
        self._serving = asyncio.create_task(server.serve(sockets=[sock]), name="occusim-http")
        while not server.started:
            if self._serving.done():
                await self._serving
                raise RuntimeError("the local occusim HTTP service stopped while starting")
            await asyncio.sleep(0.02)
        self.base_url = f"http://127.0.0.1:{port}"
        self._http = httpx.AsyncClient(base_url=self.base_url, timeout=60.0,
                                       headers={"Authorization": f"Bearer {self._api_key}"})
        return self

    @asynccontextmanager
    async def episode(self, task: Task, faults: FaultSettings, episode_id: str) -> AsyncIterator[tuple[Client, str]]:
        if self._http is None:
            raise RuntimeError("HttpTransport.start() was not awaited")
        request = CreateEpisodeRequest(
            task_id=task.id, world_model=self.world_model, faults=faults.mode, fault_count=faults.count,
            fault_duration=faults.duration, fault_window=faults.window, seed=faults.seed, mode=self.mode,
        )
        created = _created(await self._http.post("/v1/episodes", json=request.model_dump(mode="json")))
        async with connect(created.mcp_url, token=created.token, read_timeout_seconds=self.read_timeout) as client:
            yield client, created.episode_id

    def closed_record(self, episode_id: str) -> EpisodeRecord | None:
        return None  # held by the service behind HTTP

    async def close(self) -> None:
        if self._http is not None:
            await self._http.aclose()
        if self._server is not None and self._serving is not None:
            self._server.should_exit = True
            await self._serving


def _created(response: httpx.Response) -> CreateEpisodeResponse:
    """The created episode, or the service's ErrorBody raised as an HTTP error (which a batch retries)."""
    import httpx

    if response.is_success:
        return CreateEpisodeResponse.model_validate_json(response.content)
    try:
        problem = ErrorBody.model_validate_json(response.content)
        shown = f"{problem.type}: {problem.error}"
    except ValidationError:
        shown = response.text[:200]
    raise httpx.HTTPStatusError(f"POST /v1/episodes answered {response.status_code}: {shown}",
                                request=response.request, response=response)


def _embedded_server(base: type) -> type:
    class EmbeddedServer(base):
        """uvicorn inside another program: the program, not the server, owns Ctrl-C."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return EmbeddedServer
