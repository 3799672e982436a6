"""The episode viewer's pages in the hosted service: a tenant sees its own episodes, with its API key
(`Authorization: Bearer`) or through a short-lived signed link that `POST /v1/viewer-links` hands out."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, Depends, Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route

from occusim.rest import BODY_ERRORS, ApiError, JsonBodyRoute, error_responses
from occusim.server import EPISODE_ID
from occusim.viewer import PAGE_HEADERS, AccessDenied, EpisodeSource, viewer_routes

from ._api_models import ViewerLinkRequest, ViewerLinkResponse
from ._auth import ViewerGrant, ViewerLinks
from ._http_api import Hosted, bearer_credential
from ._viewer_source import StoreEpisodes

VIEW_PATH = "/v1/view"
COOKIE = "occusim_view"
_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="occusim"'}


class HostedViewer:
    """Who is looking, and the episodes they may see (one source per tenant, kept for its cache)."""

    def __init__(self, hosted: Hosted) -> None:
        self.hosted = hosted
        self.links = ViewerLinks(hosted.settings.token_key())
        self._sources: dict[str | None, StoreEpisodes] = {}

    def source(self, tenant: str | None) -> StoreEpisodes:
        if tenant not in self._sources:
            scoped = self.hosted.api_keys is not None
            self._sources[tenant] = StoreEpisodes(
                self.hosted.service.store, catalog=self.hosted.catalog, tenant=tenant, scoped=scoped,
                title=f"episodes of {tenant}" if scoped else "every episode (no API keys)",
            )
        return self._sources[tenant]

    def grant(self, token: str | None) -> ViewerGrant | None:
        """A link's grant, if it is valid here: with API keys, only one naming a tenant (a link minted without
        auth, by any instance sharing the key, would otherwise show every tenant's episodes) that has a key,
        or, with an OAuth issuer, whose tokens name any tenant, any tenant."""
        grant = self.links.verify(token)
        keys = self.hosted.api_keys
        if grant is None or keys is None:
            return grant
        if grant.tenant is None:
            return None
        return grant if self.hosted.oauth is not None or keys.has_tenant(grant.tenant) else None

    async def source_for(self, request: Request) -> EpisodeSource:
        if self.hosted.api_keys is None:
            return self.source(None)
        header = request.headers.get("authorization", "")
        if header:
            credential = bearer_credential(header)
            tenant = self.hosted.api_keys.tenant(credential) if credential is not None else None
            if tenant is None:
                raise AccessDenied(401, "unknown API key: send 'Authorization: Bearer <key>'", _CHALLENGE)
            return self.source(tenant)
        grant = self.grant(request.cookies.get(COOKIE))
        if grant is None:
            raise AccessDenied(401, "no API key, and no valid viewer link: send 'Authorization: Bearer <key>', or "
                               "open a link from POST /v1/viewer-links (they expire)", _CHALLENGE)
        return self.source(grant.tenant)

    async def open_link(self, request: Request) -> Response:
        """`/v1/view/open?access=...`: keep the grant in a cookie for the pages, then show them."""
        token = request.query_params.get("access")
        grant = self.grant(token)
        if token is None or grant is None:
            return _denied("this viewer link is not valid or has expired: ask POST /v1/viewer-links for a new one")
        episode = request.query_params.get("episode")
        target = f"{VIEW_PATH}/episodes/{episode}" if episode and EPISODE_ID.fullmatch(episode) else f"{VIEW_PATH}/"
        response = RedirectResponse(target, status_code=303, headers=PAGE_HEADERS)
        response.set_cookie(
            COOKIE, token, max_age=max(1, grant.expires_at - int(datetime.now(UTC).timestamp())), path=VIEW_PATH,
            httponly=True, samesite="lax", secure=request.url.scheme == "https",
        )
        return response


def _denied(message: str) -> Response:
    return PlainTextResponse(message, status_code=401, headers=PAGE_HEADERS | _CHALLENGE)


def viewer_mount(viewer: HostedViewer) -> Mount:
    """The pages under /v1/view, with /v1/view/open for signed links."""
    return Mount(VIEW_PATH, routes=[Route("/open", viewer.open_link, methods=["GET"]),
                                    *viewer_routes(viewer.source_for)])


def viewer_link_router(hosted: Hosted, viewer: HostedViewer) -> APIRouter:
    router = APIRouter(tags=["viewer"], route_class=JsonBodyRoute)
    tenant_of = hosted.tenant_dependency()

    @router.post(
        "/v1/viewer-links", status_code=201, summary="A short-lived link to the episode viewer",
        description="The link opens the web viewer on the caller's own episodes (or one of them) in a browser, "
        "without the API key, until it expires.",
        responses=error_responses(*BODY_ERRORS, 401, 404),
    )
    async def create_viewer_link(body: ViewerLinkRequest, request: Request,
                                 tenant: str | None = Depends(tenant_of)) -> ViewerLinkResponse:
        if body.episode_id is not None and await viewer.source(tenant).episode(body.episode_id) is None:
            raise ApiError(404, "not_found", f"no episode {body.episode_id!r} for this API key")
        token, expires_at = viewer.links.issue(tenant, body.ttl_seconds)
        base = (hosted.settings.public_url or str(request.base_url)).rstrip("/")
        query = f"access={token}" + (f"&episode={body.episode_id}" if body.episode_id else "")
        return ViewerLinkResponse(url=f"{base}{VIEW_PATH}/open?{query}",
                                  expires_at=datetime.fromtimestamp(expires_at, UTC))

    return router
