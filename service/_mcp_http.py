"""Each episode's MCP streamable-HTTP endpoint at /v1/episodes/{id}/mcp (the route checks the episode's token).

An endpoint (an MCP `Server` plus the SDK's session manager) is built on the first request for an
episode, in whichever process receives it, and dropped again once idle. Both protocol eras are served
by any process sharing the store: 2026-07-28 clients send self-contained requests (the SDK's manager
answers them), and handshake-era clients get an `Mcp-Session-Id` that any process can take up
(`LegacySessions`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from occusim.rest import ApiError
from occusim.server import (
    BackgroundJudging,
    Episode,
    EpisodeError,
    EpisodeNotFoundError,
    EpisodeService,
    build_mcp_server,
)

from ._legacy_sessions import LegacySessions
from ._mcp_messages import McpPost, read_post

log = logging.getLogger("occusim.server")


@dataclass
class _Endpoint:
    episode: Episode
    server: Server[Any]
    manager: StreamableHTTPSessionManager
    lifespan_state: Any = None
    stop: anyio.Event = field(default_factory=anyio.Event)
    in_flight: int = 0
    last_used: float = field(default_factory=time.monotonic)


class EpisodeEndpoints:
    """The live MCP endpoints of this process, one per episode in use."""

    def __init__(
        self, service: EpisodeService, security: TransportSecuritySettings, *,
        judging: BackgroundJudging, sessions: LegacySessions, max_body_bytes: int,
    ) -> None:
        self.service = service
        self.security = security
        self.judging = judging
        self.sessions = sessions
        self.max_body_bytes = max_body_bytes
        self._endpoints: dict[str, _Endpoint] = {}
        self._opening: dict[str, anyio.Lock] = {}  # episodes whose endpoint is being opened
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

    async def exchange(self, episode_id: str, body: bytes | None) -> Exchange:
        """What the route answers with: the request (whose POST `body` the route has read) handed to the
        episode's endpoint, opened if need be.

        Raises ApiError 404 for an unknown episode, 409 for one that cannot be served.
        """
        endpoint = await self._endpoint(episode_id)
        # Counted from now, not from when the answer starts, so the idle sweep cannot stop it in between.
        endpoint.in_flight += 1
        return Exchange(endpoint, self.sessions, body)

    async def _endpoint(self, episode_id: str) -> _Endpoint:
        endpoint = self._endpoints.get(episode_id)
        if endpoint is not None:
            return endpoint
        # One opening per episode at a time, and episodes open side by side: an endpoint takes a few turns of
        # the event loop to start, which one lock for all made every other episode's first request wait for
        # (up to 0.36 s for the last of 100 sessions starting together).
        lock = self._opening.setdefault(episode_id, anyio.Lock())
        try:
            async with lock:
                endpoint = self._endpoints.get(episode_id)
                if endpoint is None:
                    endpoint = self._endpoints[episode_id] = await self._open(episode_id)
                return endpoint
        finally:
            if not lock.locked() and self._opening.get(episode_id) is lock:
                del self._opening[episode_id]

    async def _open(self, episode_id: str) -> _Endpoint:
        try:
            episode = await self.service.open(episode_id)
        except EpisodeNotFoundError as error:
            raise ApiError(404, "not_found", str(error)) from None
        except EpisodeError as error:
            raise ApiError(409, "episode_unavailable", str(error)) from None
        server = build_mcp_server(episode, judging=self.judging)
        manager = StreamableHTTPSessionManager(
            app=server,
            security_settings=self.security,
            # Plain JSON answers: tool calls send no notifications, and SSE framing cost legacy
            # clients ~6 ms per call (bench/bench_http_overhead.py).
            json_response=True,
            max_request_body_size=self.max_body_bytes,
            # It serves only 2026-07-28 requests; handshake-era sessions are LegacySessions'.
            stateless=True,
        )
        endpoint = _Endpoint(episode, server, manager)
        if self._task_group is None:
            raise RuntimeError("EpisodeEndpoints is not running; serve it inside `running()`")
        await self._task_group.start(self._run, endpoint)
        return endpoint

    @staticmethod
    async def _run(endpoint: _Endpoint, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with endpoint.manager.run(), endpoint.server.lifespan(endpoint.server) as state:
            endpoint.lifespan_state = state
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


class Exchange(Response):
    """Not a response of its own: it hands the request to the episode's MCP endpoint, which answers."""

    def __init__(self, endpoint: _Endpoint, sessions: LegacySessions, body: bytes | None) -> None:
        super().__init__()
        self.endpoint = endpoint
        self.sessions = sessions
        self.body_read = body
        self.post = read_post(body) if body is not None else McpPost()
        self._done = False

    @property
    def tenant(self) -> str | None:
        return self.endpoint.episode.record.tenant

    def release(self) -> None:
        """Give the endpoint back without answering (the request was refused)."""
        if not self._done:
            self._done = True
            self.endpoint.in_flight -= 1
            self.endpoint.last_used = time.monotonic()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.body_read is not None:
            receive = _replay(self.body_read, receive)
        endpoint = self.endpoint
        try:
            if _modern(scope):
                await endpoint.manager.handle_request(scope, receive, send)
            else:
                await self.sessions.serve(endpoint.server, endpoint.lifespan_state, endpoint.episode.id,
                                          self.post.initialize_version, scope, receive, send)
        finally:
            self.release()


def _modern(scope: Scope) -> bool:
    """A 2026-07-28 request: one naming a protocol version the handshake does not reach (the SDK's rule)."""
    version = Headers(scope=scope).get(MCP_PROTOCOL_VERSION_HEADER)
    return version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS


def _replay(body: bytes, receive: Receive) -> Receive:
    """`receive` for a request whose body was read already: the body once, then the client's own messages."""
    pending = True

    async def replayed() -> Message:
        nonlocal pending
        if pending:
            pending = False
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
