"""The hosted service: the catalog's tasks as MCP episodes over HTTP, the episode API and the judge.

`create_app(settings)` assembles the app from the route modules; `occusim serve --http` runs it with uvicorn.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import APIRouter, Depends, FastAPI
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware import Middleware

from occusim.environments import Catalog, load_catalog
from occusim.judge import judge_router
from occusim.rest import error_responses, rest_app
from occusim.server import NATIVE, BackgroundJudging, EpisodeService, SimulationProtocol, Store

from ._auth import ApiKeys, EpisodeTokens
from ._config import ConfigError, ServiceSettings
from ._counters import Counters, counters_for
from ._http_api import Hosted
from ._http_guards import HostGuard, cors
from ._idle_expiry import expire_idle_forever
from ._judge_meter import judge_meter
from ._legacy_sessions import LegacySessions
from ._mcp_http import EpisodeEndpoints
from ._mcp_lane import McpLane
from ._oauth import JwtVerifier
from ._routes_catalog import catalog_router
from ._routes_episodes import episode_router
from ._routes_usage import usage_router
from ._routes_viewer import HostedViewer, viewer_link_router, viewer_mount
from ._shared_secret import check_shared_key
from ._tenant_limits import TenantLimiter

log = logging.getLogger("occusim.server")


def create_app(settings: ServiceSettings, *, catalog: Catalog | None = None, store: Store | None = None,
               counters: Counters | None = None, protocol: SimulationProtocol = NATIVE) -> FastAPI:
    """Build the service. Raises ConfigError for unsafe settings (auth off beyond loopback, no keys).

    `protocol` is the one `settings.protocol` names, loaded by the caller (`occusim serve` loads it with
    `load_protocol`); a ConfigError says when they differ.

    `catalog` defaults to the bundled catalog plus `settings.sources`; `store` to `Store(settings.db)`,
    which the app then opens and closes with its lifespan (a store passed in is initialised, not closed);
    `counters` (tenant usage, ended MCP sessions) to Redis at `settings.redis`, else this process's memory.
    """
    settings.check_exposure()
    if protocol.name != settings.protocol:
        raise ConfigError(f"the settings name the {settings.protocol} protocol but the app was given the "
                          f"{protocol.name} one; load it with occusim.clients.load_protocol")
    settings.check_token_secret()
    oauth = settings.oauth()
    catalog = catalog if catalog is not None else load_catalog(settings.sources, bundled=settings.bundled)
    owns_store = store is None
    store = store if store is not None else Store(settings.db, schema=settings.db_schema,
                                                  pool_size=settings.db_pool_size,
                                                  max_overflow=settings.db_max_overflow)
    owns_counters = counters is None
    counters = counters if counters is not None else counters_for(settings.redis, prefix=settings.redis_prefix,
                                                                        connections=settings.redis_connections)
    limits = TenantLimiter(counters, store, defaults=settings.limits, tenants=settings.tenant_limits)
    hook = protocol.judge_hook(settings.judge_model, catalog)
    service = EpisodeService(catalog, store, world_model=settings.world_model, judge=hook, protocol=protocol,
                             max_argument_depth=settings.max_argument_depth,
                             call_deadline=settings.tool_call_timeout,
                             max_concurrent_calls=settings.max_concurrent_calls, on_cost=limits.record_spend,
                             spend_hold=limits.holding_spend)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=settings.trusted_hosts(),
        allowed_origins=settings.trusted_origins(),
    )
    judging = BackgroundJudging()
    endpoints = EpisodeEndpoints(
        service, security, judging=judging, max_body_bytes=settings.max_body_bytes,
        sessions=LegacySessions(settings.token_key(), counters, security),
    )
    hosted = Hosted(
        settings=settings, catalog=catalog, service=service,
        api_keys=None if settings.no_auth else ApiKeys(settings.api_keys),
        tokens=EpisodeTokens(settings.token_key()), judging=judging, endpoints=endpoints, limits=limits,
        oauth=JwtVerifier(oauth) if oauth is not None else None,
    )
    # The same judging route as `occusim judge-serve`, here behind the tenants' API keys.
    judge = APIRouter(dependencies=[Depends(hosted.tenant_dependency())], responses=error_responses(401))
    judge.include_router(judge_router(settings.judge_model, meter=judge_meter(hosted)))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await store.init()
        await check_shared_key(store, settings.token_key())
        # Judgments lost with a killed or stopped process start again; several processes sharing a store
        # may each judge such an episode once, and the latest verdict is the one read.
        await judging.resume(service)
        try:
            async with endpoints.running(), anyio.create_task_group() as background:
                background.start_soon(
                    expire_idle_forever, service, settings.episode_idle_seconds, settings.expire_every_seconds,
                    lambda expired: endpoints.release(idle_seconds=settings.episode_idle_seconds,
                                                      episode_ids=expired),
                )
                yield
                background.cancel_scope.cancel()
            await judging.drain(settings.drain_seconds)
        finally:
            if owns_counters:
                await counters.close()
            if owns_store:
                await store.close()

    viewer = HostedViewer(hosted)
    body_limit = "max_body_bytes in the service config"
    app = rest_app(
        title="occusim", description="Occupational scenarios served as MCP episodes, simulated and judged.",
        routers=[catalog_router(hosted), episode_router(hosted), usage_router(hosted), judge,
                 viewer_link_router(hosted, viewer)],
        max_body_bytes=settings.max_body_bytes, body_limit_setting=body_limit,
        middleware=[Middleware(HostGuard, security=security),
                    Middleware(McpLane, hosted=hosted, setting=body_limit),
                    cors(settings.trusted_origins())],
        lifespan=lifespan,
    )
    # The episode viewer's HTML pages (not part of the API document).
    app.router.routes.append(viewer_mount(viewer))
    if oauth is not None:  # RFC 9728: where clients find the authorization server
        app.router.routes.extend(oauth.metadata_routes())
    return app
