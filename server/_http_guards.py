"""The ASGI guard in front of every route: the Host/Origin allow-list against DNS rebinding."""

from __future__ import annotations

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from occusim.rest import ApiError, error_response

_REFUSALS = {
    421: ("untrusted_host", "host", "add it with --allowed-host or allowed_hosts in the service config"),
    403: ("untrusted_origin", "origin", "browsers may only call this service from the allowed origins"),
}


class HostGuard:
    """Refuse requests whose Host (421) or Origin (403) header is not among the trusted ones.

    The MCP SDK decides, so the REST routes and the MCP endpoints trust exactly the same headers.
    """

    def __init__(self, app: ASGIApp, *, security: TransportSecuritySettings) -> None:
        self.app = app
        self.security = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = await self.security.validate_request(request)
        if refused is None:
            await self.app(scope, receive, send)
            return
        kind, header, advice = _REFUSALS.get(refused.status_code, ("refused", "", ""))
        reason = bytes(refused.body).decode(errors="replace")
        shown = f": {request.headers.get(header)!r}; {advice}" if header else ""
        await error_response(ApiError(refused.status_code, kind, f"{reason}{shown}"))(scope, receive, send)
