"""The viewer's routes: the index, one episode's page and the packaged assets, behind security headers.

`viewer_routes` serves whatever source the caller picks per request (the hosted service picks the caller's
tenant); `viewer_app` is the local app of `occusim view` over one source.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Lifespan

from occusim.environments import OccusimError

from ._labelling import LabelDesk, save_labels
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
# The run's report is one file written by `occusim report`: inline CSS, plots as data: images, no script.
REPORT_HEADERS = PAGE_HEADERS | {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'none'",
}


class AccessDenied(OccusimError):
    """The request may not see these pages (or this episode); answered as a plain-text error."""

    def __init__(self, status_code: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers or {}


def _base(request: Request) -> str:
    return str(request.scope.get("root_path", "")).rstrip("/")


def viewer_routes(source_for: SourceFor, *, labels: LabelDesk | None = None,
                  report: Path | None = None) -> list[BaseRoute]:
    """`/` (the index, filtered by its query string), `/episodes/{id}` and `/static/...`; with `labels`, the
    episode pages carry the labelling form, which posts to `/labels/{id}`; given the path of the run's HTML
    report, `/report` (the file as it is at each request; linked from the pages while it exists)."""

    async def report_written() -> bool:
        return report is not None and await asyncio.to_thread(report.is_file)

    async def report_href(request: Request) -> str | None:
        return f"{_base(request)}/report" if await report_written() else None

    async def index(request: Request) -> Response:
        try:
            source = await source_for(request)
        except AccessDenied as denied:
            return _denied(denied)
        entries = await source.entries()
        title = source.title
        if labels is not None:
            title = labels.title(title, await labels.progress(entries))
            entries = [labels.shown_entry(entry) for entry in entries]
        page = render_index(entries, dict(request.query_params), base=_base(request), source_title=title,
                            limited=source.limited, blind=labels is not None and labels.blind,
                            report_href=await report_href(request))
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
        detail = detail.model_copy(update={"report_href": await report_href(request)})
        form, title = None, source.title
        if labels is not None:
            saved = request.query_params.get("saved", "")
            form = await labels.form(detail, source, base=_base(request),
                                     saved=int(saved) if saved.isdigit() else None)
            detail, title = labels.shown_detail(detail), labels.title(title)
        page = render_episode(detail, base=_base(request), source_title=title, labelling=form)
        return HTMLResponse(page, headers=PAGE_HEADERS)

    async def label(request: Request) -> Response:
        assert labels is not None
        try:
            source = await source_for(request)
        except AccessDenied as denied:
            return _denied(denied)
        status, text = await save_labels(request, source, labels)
        if status == 303:
            return RedirectResponse(_base(request) + text, status_code=303, headers=PAGE_HEADERS)
        return PlainTextResponse(text, status_code=status, headers=PAGE_HEADERS)

    async def run_report(_request: Request) -> Response:
        if report is None or not await report_written():
            return PlainTextResponse(f"no report yet; write it with `occusim report RUN_DIR --format html --out "
                                     f"{report}`", status_code=404, headers=PAGE_HEADERS)
        return FileResponse(report, media_type="text/html; charset=utf-8", headers=REPORT_HEADERS)

    routes: list[BaseRoute] = [
        Route("/", index, methods=["GET"], name="viewer_index"),
        Route("/episodes/{episode_id:path}", episode, methods=["GET"], name="viewer_episode"),
        Mount("/static", StaticFiles(directory=STATIC), name="viewer_static"),
    ]
    if labels is not None:
        routes.append(Route("/labels/{episode_id:path}", label, methods=["POST"], name="viewer_labels"))
    if report is not None:
        routes.append(Route("/report", run_report, methods=["GET"], name="viewer_report"))
    return routes


def _denied(denied: AccessDenied) -> Response:
    return PlainTextResponse(str(denied), status_code=denied.status_code, headers=PAGE_HEADERS | denied.headers)


def viewer_app(source: EpisodeSource, *, lifespan: Lifespan[Starlette] | None = None,
               labels: LabelDesk | None = None, report: Path | None = None) -> Starlette:
    """The local viewer over one source, for loopback only: other Host names (DNS rebinding) are refused.

    `lifespan` runs around serving (to close what the source reads from when the server stops); `labels` turns
    on labelling mode (a reviewer's labels saved to its file); `report` is where the run's HTML report is (or
    will be) written, served at `/report`."""

    async def fixed(_request: Request) -> EpisodeSource:
        return source

    loopback = Middleware(TrustedHostMiddleware, allowed_hosts=["127.0.0.1", "localhost", "[::1]"])
    return Starlette(routes=viewer_routes(fixed, labels=labels, report=report), middleware=[loopback],
                     lifespan=lifespan)
