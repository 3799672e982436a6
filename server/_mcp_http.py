"""Each episode's MCP streamable-HTTP endpoint at /v1/episodes/{id}/mcp (the route checks the episode's token).

An endpoint (an MCP `Server` plus the SDK's session manager) is built on the first request for an
episode, in whichever process receives it, and dropped again once idle. The session manager serves
both protocol eras: 2026-07-28 clients send self-contained requests without a session id, so any
process sharing the store can answer them; handshake-era clients get an `Mcp-Session-Id` that lives
in the process which created it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from occusim.rest import ApiError

from ._episodes import EpisodeService
from ._errors import EpisodeError, EpisodeNotFoundError
from ._judging import BackgroundJudging
from ._mcp_server import build_mcp_server

log = logging.getLogger("occusim.server")


@dataclass
class _Endpoint:
    manager: StreamableHTTPSessionManager
    stop: anyio.Event = field(default_factory=anyio.Event)
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)


class EpisodeEndpoints:
    """The live MCP endpoints of this process, one per episode in use."""

    def __init__(
        self, service: EpisodeService, security: TransportSecuritySettings, *,
        judging: BackgroundJudging, max_body_bytes: int, session_idle_seconds: float,
    ) -> None:
        self.service = service
        self.security = security
        self.judging = judging
        self.max_body_bytes = max_body_bytes
        self.session_idle_seconds = session_idle_seconds
        self._endpoints: dict[str, _Endpoint] = {}
        self._lock = anyio.Lock()
        self._task_group: TaskGroup | None = None

    def __len__(self) -> int:
        return len(self._endpoints)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Hold the task group the endpoints' session managers run in; closing it stops them all."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            try:
                yield
            finally:
                self._task_group = None
                for endpoint in self._endpoints.values():
                    endpoint.stop.set()
                self._endpoints.clear()

    async def exchange(self, episode_id: str) -> Response:
        """What the route answers with: the request handed to the episode's endpoint, opened if need be.

        Raises ApiError 404 for an unknown episode, 409 for one that cannot be served.
        """
        endpoint = await self._endpoint(episode_id)
        # Counted from now, not from when the answer starts, so the idle sweep cannot stop it in between.
        endpoint.in_flight += 1
        return _Exchange(endpoint)

    async def _endpoint(self, episode_id: str) -> _Endpoint:
        endpoint = self._endpoints.get(episode_id)
        if endpoint is not None:
            return endpoint
        async with self._lock:
            endpoint = self._endpoints.get(episode_id)
            if endpoint is not None:
                return endpoint
            try:
                episode = await self.service.open(episode_id)
            except EpisodeNotFoundError as error:
                raise ApiError(404, "not_found", str(error)) from None
            except EpisodeError as error:
                raise ApiError(409, "episode_unavailable", str(error)) from None
            manager = StreamableHTTPSessionManager(
                app=build_mcp_server(episode, judging=self.judging),
                security_settings=self.security,
                # Plain JSON answers: tool calls send no notifications, and SSE framing cost legacy
                # clients ~6 ms per call (bench/bench_http_overhead.py).
                json_response=True,
                max_request_body_size=self.max_body_bytes,
                session_idle_timeout=self.session_idle_seconds,
            )
            endpoint = _Endpoint(manager)
            if self._task_group is None:
                raise RuntimeError("EpisodeEndpoints is not running; serve it inside `running()`")
            await self._task_group.start(self._run, endpoint)
            self._endpoints[episode_id] = endpoint
            return endpoint

    @staticmethod
    async def _run(endpoint: _Endpoint, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with endpoint.manager.run():
            task_status.started()
            await endpoint.stop.wait()

    def release(self, *, idle_seconds: float, episode_ids: tuple[str, ...] | list[str] = ()) -> list[str]:
        """Stop endpoints with no request in flight that are idle or whose episode expired."""
        now = time.monotonic()
        chosen = set(episode_ids)
        released = []
        for episode_id, endpoint in list(self._endpoints.items()):
            if endpoint.in_flight:
                continue
            if episode_id in chosen or now - endpoint.last_used >= idle_seconds:
                endpoint.stop.set()
                del self._endpoints[episode_id]
                released.append(episode_id)
        return released


class _Exchange(Response):
    """Not a response of its own: it hands the request to the episode's MCP session manager, which answers."""

    def __init__(self, endpoint: _Endpoint) -> None:
        super().__init__()
        self.endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.endpoint.manager.handle_request(scope, receive, send)
        finally:
            self.endpoint.in_flight -= 1
            self.endpoint.last_used = time.monotonic()
