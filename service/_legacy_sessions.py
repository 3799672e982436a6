"""Handshake-era MCP sessions (`Mcp-Session-Id`) that any replica can serve, with no proxy stickiness.

A session keeps no state in a process: its id is signed with the service key (as episode tokens are) and
carries the protocol version negotiated at `initialize`, and every request is served by a transport made
for it alone. What a session would otherwise hold is not needed here: the episode lives in the store and
its tools send the client no requests or notifications. A session ended with DELETE is remembered in the
shared counters (Redis across replicas), so every replica answers it 404 afterwards.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER, StreamableHTTPServerTransport
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION, INVALID_REQUEST
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from ._counters import Counters, CountersUnavailableError

log = logging.getLogger("occusim.server")

# How long a session ended with DELETE keeps answering 404 (its episode has long expired by then).
ENDED_SECONDS = 7 * 86_400.0


def negotiated_version(requested: Any) -> str:
    """The version the server answers an `initialize` asking for `requested` with (the SDK's rule)."""
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


class LegacySessions:
    """Issues and checks the session ids of every episode, and serves each handshake-era request."""

    def __init__(self, key: bytes, ended: Counters, security: TransportSecuritySettings) -> None:
        self._key = hmac.new(key, b"occusim mcp session id", hashlib.sha256).digest()
        self.ended = ended
        self.security = security

    def issue(self, episode_id: str, version: str) -> str:
        nonce = secrets.token_urlsafe(12)
        return f"{nonce}.{version}.{self._mac(episode_id, nonce, version)}"

    def version_of(self, episode_id: str, session_id: str) -> str | None:
        """The session's protocol version when this service issued the id for this episode, else None."""
        nonce, _, rest = session_id.partition(".")
        version, _, mac = rest.partition(".")
        if not (nonce and version in HANDSHAKE_PROTOCOL_VERSIONS and mac):
            return None
        if not hmac.compare_digest(mac.encode(), self._mac(episode_id, nonce, version).encode()):
            return None
        return version

    def _mac(self, episode_id: str, nonce: str, version: str) -> str:
        digest = hmac.new(self._key, f"{episode_id}\n{nonce}\n{version}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest[:18]).decode()

    async def serve(self, server: Server[Any], lifespan_state: Any, episode_id: str, opening: str | None,
                    scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one handshake-era request. `opening` is the protocol version an `initialize` POST asks
        for (None for any other request)."""
        method = scope["method"]
        presented = Headers(scope=scope).get(MCP_SESSION_ID_HEADER)
        if presented is None:
            if method == "POST" and opening is not None:
                version = negotiated_version(opening)
                await _serve_request(server, lifespan_state, self.security, self.issue(episode_id, version),
                                     version, scope, receive, send)
            elif method == "POST":
                # A transport whose id nobody holds answers the SDK's own 400 "Missing session ID".
                await _serve_request(server, lifespan_state, self.security, secrets.token_hex(16),
                                     DEFAULT_NEGOTIATED_VERSION, scope, receive, send)
            else:
                await _error(400, "Bad Request: Missing session ID")(scope, receive, send)
            return
        known = self.version_of(episode_id, presented)
        if known is None or await self._ended(presented):
            await _error(404, "Not Found: Invalid or expired session ID")(scope, receive, send)
        elif method == "DELETE":
            try:
                await self.ended.flag(f"ended-session:{presented}", ttl=ENDED_SECONDS)
            except CountersUnavailableError as error:
                log.warning("an ended MCP session was not recorded: %s", error)
            await Response(status_code=200, headers={MCP_SESSION_ID_HEADER: presented})(scope, receive, send)
        elif method == "GET":
            # No stream to offer: these tools send nothing unasked, and a stream would tie a client to one
            # replica. The protocol lets a server answer 405 here.
            await _error(405, "Method Not Allowed: this server sends no messages outside responses",
                         {"Allow": "POST, DELETE"})(scope, receive, send)
        else:
            await _serve_request(server, lifespan_state, self.security, presented, known, scope, receive, send)


    async def _ended(self, session_id: str) -> bool:
        # Shared counters out of reach: the session is served rather than refused (it is only an ended
        # session that would be let through, and only while Redis is away).
        try:
            return await self.ended.flagged(f"ended-session:{session_id}")
        except CountersUnavailableError as error:
            log.warning("could not check whether an MCP session ended: %s", error)
            return False


async def _serve_request(server: Server[Any], lifespan_state: Any, security: TransportSecuritySettings,
                         session_id: str, version: str, scope: Scope, receive: Receive, send: Send) -> None:
    """One request on a transport made for it, under a connection born with the session's version."""
    transport = StreamableHTTPServerTransport(
        mcp_session_id=session_id, is_json_response_enabled=True, security_settings=security,
    )

    async def run(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with transport.connect() as (read_stream, write_stream):
            task_status.started()
            dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
                read_stream, write_stream, inline_methods=frozenset({"initialize"}),
                # No back channel: a reply to a server request would reach whichever replica it lands on.
                transport_builder=lambda _metadata: TransportContext(kind="streamable-http", can_send_request=False),
            )
            connection = Connection.from_envelope(version, None, None)
            try:
                await serve_connection(server, dispatcher, connection=connection, lifespan_state=lifespan_state)
            except Exception:
                log.exception("MCP session request failed")

    async with anyio.create_task_group() as task_group:
        await task_group.start(run)
        try:
            await transport.handle_request(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await transport.terminate()


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return JSONResponse(body, status_code=status, headers=headers)
