"""The ASGI guards in front of every route: the Host/Origin allow-list against DNS rebinding, and CORS
preflights answered for the trusted origins."""

from __future__ import annotations

import re

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from occusim.rest import ApiError, error_response

# A name or IPv4 address, or a bracketed IPv6 address, then an optional numeric port: nothing else.
_HOST = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
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
        host = request.headers.get("host")
        if host is not None and not _HOST.fullmatch(host):
            # The SDK matches `127.0.0.1:*` by prefix, which `127.0.0.1:80@evil.com` would pass.
            message = f"malformed Host header {host!r}; expected host or host:port"
            await error_response(ApiError(421, "untrusted_host", message))(scope, receive, send)
            return
        refused = await self.security.validate_request(request)
        if refused is None:
            await self.app(scope, receive, send)
            return
        kind, header, advice = _REFUSALS.get(refused.status_code, ("refused", "", ""))
        reason = bytes(refused.body).decode(errors="replace")
        shown = f": {request.headers.get(header)!r}; {advice}" if header else ""
        await error_response(ApiError(refused.status_code, kind, f"{reason}{shown}"))(scope, receive, send)


def host_guard(hosts: list[str], origins: list[str]) -> Middleware:
    """The HostGuard for a service that trusts `hosts` (Host header patterns) and `origins`."""
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                         allowed_origins=origins)
    return Middleware(HostGuard, security=security)


def cors(origins: list[str]) -> Middleware:
    """Answer browsers' CORS preflights (OPTIONS) for the trusted origins; `http://host:*` takes any port."""
    pattern = "|".join(re.escape(origin).replace(r"\*", "[0-9]+") for origin in origins)
    return Middleware(
        CORSMiddleware, allow_origin_regex=f"(?:{pattern})", allow_methods=["GET", "POST", "DELETE"],
        allow_headers=["Authorization", "Content-Type", "Accept", "Mcp-Session-Id", "MCP-Protocol-Version",
                       "Last-Event-ID"],
        expose_headers=["Mcp-Session-Id", "WWW-Authenticate"],
    )
