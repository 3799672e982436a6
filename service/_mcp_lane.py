"""The episodes' MCP endpoints served in front of the REST routing: every tool call of every episode comes
this way, and the REST framework's routing, dependency solving and per-route wrappers cost more CPU than
the rest of the request's handling outside the MCP SDK (bench/bench_hosted_vs_sdk.py).

The lane answers exactly what the REST route would (`_mcp_entry` holds what both do), for requests it can
answer alone: POST, GET and DELETE on `/v1/episodes/{id}/mcp` (with or without the trailing slash) that
carry no `Origin` header. Everything else, browsers' requests among them (their CORS headers are the REST
stack's), takes the REST stack as before. It sits behind the Host guard, so it trusts the same hosts.
"""

from __future__ import annotations

import re

from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from occusim.rest import ApiError, body_too_large, declares_too_much, error_response, limited_receive

from ._http_api import Hosted, bearer_credential
from ._mcp_entry import open_mcp_exchange

_ENDPOINT = re.compile(r"/v1/episodes/([^/]+)/mcp/?")
_METHODS = frozenset({"POST", "GET", "DELETE"})


class McpLane:
    """ASGI middleware: requests to an episode's MCP endpoint are answered here, the rest passed on."""

    def __init__(self, app: ASGIApp, *, hosted: Hosted, setting: str) -> None:
        """`setting` names what raises the body limit (the service's max_body_bytes), for the 413 message."""
        self.app = app
        self.hosted = hosted
        self.max_body_bytes = hosted.settings.max_body_bytes
        self.setting = setting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        episode_id = self._episode_of(scope)
        if episode_id is None:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if "origin" in headers:  # a browser's request: the REST stack adds its CORS headers
            await self.app(scope, receive, send)
            return
        try:
            if declares_too_much(headers, self.max_body_bytes):
                raise body_too_large(self.max_body_bytes, self.setting)
            body = None
            if scope["method"] == "POST":
                body = await self._body(receive)
                if body is None:  # the client left before its body came
                    return
            response = await open_mcp_exchange(
                self.hosted, episode_id, credential=bearer_credential(headers.get("authorization")),
                version=headers.get(MCP_PROTOCOL_VERSION_HEADER), body=body,
            )
        except ApiError as error:
            response = error_response(error)
        await response(scope, receive, send)

    @staticmethod
    def _episode_of(scope: Scope) -> str | None:
        if scope["type"] != "http" or scope["method"] not in _METHODS:
            return None
        path: str = scope["path"]
        root = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root):]
        matched = _ENDPOINT.fullmatch(path)
        return matched.group(1) if matched else None

    async def _body(self, receive: Receive) -> bytes | None:
        """The whole body; ApiError 413 past the limit; None when the client left."""
        limited = limited_receive(receive, self.max_body_bytes, self.setting)
        chunks: list[bytes] = []
        while True:
            message = await limited()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)
