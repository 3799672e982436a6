"""ASGI guards in front of every route: the Host/Origin allow-list (DNS rebinding) and the body size limit."""

from __future__ import annotations

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._http_api import ApiError, error_response


class RequestGuards:
    """Refuse requests from untrusted Host/Origin headers (421/403) and bodies over the limit (413).

    The body limit is enforced on the declared Content-Length and again while the body streams in, so a
    chunked upload cannot get around it.
    """

    def __init__(self, app: ASGIApp, *, security: TransportSecuritySettings, max_body_bytes: int) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(security)
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = await self.security.validate_request(Request(scope))
        if refused is not None:
            await refused(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            await error_response(self._too_large())(scope, receive, send)
            return
        await self.app(scope, self._limited(receive), send)

    def _too_large(self) -> ApiError:
        return ApiError(
            413, "body_too_large",
            f"the request body is larger than this service's limit of {self.max_body_bytes} bytes "
            "(max_body_bytes in the service config)",
        )

    def _limited(self, receive: Receive) -> Receive:
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise self._too_large()
            return message

        return limited_receive
