"""The viewer's routes: the index, one episode's page and the packaged assets, behind security headers.

`viewer_routes` serves whatever source the caller picks per request (the hosted service picks the caller's
tenant); `viewer_app` is the local app of `occusim view` over one source.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Lifespan

from occusim.environments import OccusimError

from ._models import EpisodeSource
from ._render import STATIC, render_episode, render_index

SourceFor = Callable[[Request], Awaitable[EpisodeSource]]

# Episode content is untrusted: besides escaping it, the pages run only the package's own script and
# load nothing from anywhere else.
PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class AccessDenied(OccusimError):
    """The request may not see these pages (or this episode); answered as a plain-text error."""

    def __init__(self, status_code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers or {}


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def viewer_routes(source_for: SourceFor) -> list[BaseRoute]:
    """`/` (the index, filtered by its query string), `/episodes/{id}` and `/static/...`."""

    async def index(request: Request) -> Response:
        try:
            source = await source_for(request)
        except AccessDenied as denied:
            return _denied(denied)
        entries = await source.entries()
        page = render_index(entries, dict(request.query_params), base=_base(request), source_title=source.title,
                            limited=source.limited)
        return HTMLResponse(page, headers=PAGE_HEADERS)

    async def episode(request: Request) -> Response:
        try:
            source = await source_for(request)
        except AccessDenied as denied:
            return _denied(denied)
        episode_id = request.path_params["episode_id"]
        detail = await source.episode(episode_id)
        if detail is None:
            return PlainTextResponse(f"no episode {episode_id!r} here", status_code=404, headers=PAGE_HEADERS)
        page = render_episode(detail, base=_base(request), source_title=source.title)
        return HTMLResponse(page, headers=PAGE_HEADERS)

    return [
        Route("/", index, methods=["GET"], name="viewer_index"),
        Route("/episodes/{episode_id:path}", episode, methods=["GET"], name="viewer_episode"),
        Mount("/static", StaticFiles(directory=STATIC), name="viewer_static"),
    ]


def _denied(denied: AccessDenied) -> Response:
    return PlainTextResponse(str(denied), status_code=denied.status_code, headers=PAGE_HEADERS | denied.headers)


def viewer_app(source: EpisodeSource, *, lifespan: Lifespan[Starlette] | None = None) -> Starlette:
    """The local viewer over one source, for loopback only: other Host names (DNS rebinding) are refused.

    `lifespan` runs around serving (to close what the source reads from when the server stops)."""

    async def fixed(_request: Request) -> EpisodeSource:
        return source

    loopback = Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]"])
    return Starlette(routes=viewer_routes(fixed), middleware=[loopback], lifespan=lifespan)
