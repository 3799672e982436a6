"""GET /v1/usage: what the calling tenant has consumed and the limits that apply to it."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from occusim.rest import JsonBodyRoute, error_responses

from ._api_models import TenantUsage
from ._http_api import Hosted, tenant_limits_answered


def usage_router(hosted: Hosted) -> APIRouter:
    router = APIRouter(tags=["usage"], route_class=JsonBodyRoute)
    tenant_of = hosted.tenant_dependency()

    @router.get("/v1/usage", summary="The calling tenant's usage and limits",
                description="Open episodes, tool calls this minute and world-model spend today (UTC), counted "
                            "across every replica sharing the store and Redis; a limit of null does not apply.",
                responses=error_responses(401, 503))
    async def usage(tenant: str | None = Depends(tenant_of)) -> TenantUsage:
        with tenant_limits_answered():
            return await hosted.limits.usage(tenant)

    return router
