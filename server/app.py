"""The hosted service: the catalog's tasks as MCP episodes over HTTP, the episode API and the judge.

`create_app(settings)` assembles the Starlette app from the route modules; `occusim serve --http` runs
it with uvicorn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from occusim.environments import Catalog, load_catalog
from occusim.judge import JUDGE_PATH, JudgeRequest, Verdict, judge_endpoint

from ._auth import ApiKeys, EpisodeTokens
from ._config import ServiceSettings
from ._episodes import EpisodeService
from ._http_api import ApiError, ApiRoute, Hosted, Operation, handle_api_error
from ._http_guards import RequestGuards
from ._judging import BackgroundJudging, judge_hook
from ._mcp_http import EpisodeEndpoints
from ._openapi import openapi_document
from ._routes_catalog import catalog_routes
from ._routes_episodes import MCP, episode_routes
from ._store import Store

log = logging.getLogger("occusim.server")

OPENAPI_PATH = "/openapi.json"
JUDGE = Operation("POST", JUDGE_PATH, "Judge a trajectory against a task (stateless)", Verdict, JudgeRequest,
                  errors=(502,), tag="judge")


def create_app(settings: ServiceSettings, *, catalog: Catalog | None = None, store: Store | None = None) -> Starlette:
    """Build the service. Raises ConfigError for unsafe settings (auth off beyond loopback, no keys).

    `catalog` defaults to the bundled catalog plus `settings.sources`; `store` to `Store(settings.db)`,
    which the app then opens and closes with its lifespan (a store passed in is initialised, not closed).
    """
    settings.check_exposure()
    catalog = catalog if catalog is not None else load_catalog(settings.sources, bundled=settings.bundled)
    owns_store = store is None
    store = store if store is not None else Store(settings.db, schema=settings.db_schema)
    service = EpisodeService(catalog, store, world_model=settings.world_model, judge=judge_hook(settings.judge_model))
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=settings.trusted_hosts(),
        allowed_origins=settings.trusted_origins(),
    )
    judging = BackgroundJudging()
    tokens = EpisodeTokens(settings.token_key())
    endpoints = EpisodeEndpoints(
        service, tokens, security, judging=judging, max_body_bytes=settings.max_body_bytes,
        session_idle_seconds=settings.episode_idle_seconds,
    )
    hosted = Hosted(
        settings=settings, catalog=catalog, service=service,
        api_keys=None if settings.no_auth else ApiKeys(settings.api_keys),
        tokens=tokens, judging=judging, endpoints=endpoints,
    )
    routes: list[BaseRoute] = [*catalog_routes(hosted), *episode_routes(hosted), _judge_route(hosted)]
    operations = [route.operation for route in routes if isinstance(route, ApiRoute)] + [MCP]
    document = openapi_document(sorted(operations, key=lambda op: (op.tag, op.path)))

    async def openapi(request: Request) -> Response:
        return JSONResponse(document)

    routes.append(Route(OPENAPI_PATH, openapi, methods=["GET"]))

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await store.init()
        try:
            async with endpoints.running(), anyio.create_task_group() as background:
                background.start_soon(_expire_idle, hosted)
                yield
                background.cancel_scope.cancel()
            await judging.drain(settings.drain_seconds)
        finally:
            if owns_store:
                await store.close()

    return Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={ApiError: handle_api_error},
        middleware=[Middleware(RequestGuards, security=security, max_body_bytes=settings.max_body_bytes)],
    )


def _judge_route(hosted: Hosted) -> ApiRoute:
    judged = judge_endpoint(hosted.settings.judge_model, max_body_bytes=hosted.settings.max_body_bytes)

    async def endpoint(request: Request) -> Response:
        hosted.tenant(request)
        return await judged(request)

    return ApiRoute(JUDGE, endpoint)


async def _expire_idle(hosted: Hosted) -> None:
    """Every expire_every_seconds: expire idle open episodes and release idle MCP endpoints."""
    settings = hosted.settings
    while True:
        await anyio.sleep(settings.expire_every_seconds)
        try:
            expired = await hosted.service.expire_idle(settings.episode_idle_seconds)
        except Exception:  # a store hiccup must not end the loop; the next round retries
            log.exception("expiring idle episodes failed")
            continue
        released = hosted.endpoints.release(idle_seconds=settings.episode_idle_seconds, episode_ids=expired)
        if expired or released:
            log.info("expired %d idle episode(s); released %d MCP endpoint(s)", len(expired), len(released))
