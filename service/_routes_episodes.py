"""Episode routes: create an episode, read its status and verdict, submit it, and its MCP endpoint.

A tenant only ever sees its own episodes: another tenant's episode answers 404 exactly like a missing
one, so ids do not leak.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from fastapi.security import HTTPAuthorizationCredentials
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from occusim.environments import EpisodeRecord, UnknownTaskError
from occusim.judge import Verdict
from occusim.rest import BODY_ERRORS, ApiError, JsonBodyRoute, error_responses
from occusim.server import EPISODE_ID, EpisodeClosedError, EpisodeError, EpisodeNotFoundError

from ._api_models import CreateEpisodeRequest, CreateEpisodeResponse, EpisodeView, SubmitRequest
from ._config import ModelNotAllowedError
from ._http_api import EPISODE_TOKEN_CREDENTIALS, Hosted, tenant_limits_answered
from ._mcp_entry import MCP_PATH, open_mcp_exchange

_MCP_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The MCP answer: JSON, or an event stream for a legacy GET",
          "content": {"application/json": {}, "text/event-stream": {}}},
    202: {"description": "A notification or response from the client, accepted"},
    400: {"description": "Not a valid MCP message (answered with a JSON-RPC error)"},
    406: {"description": "The Accept header lacks application/json or text/event-stream"},
    **error_responses(401, 404, 409, 413, 429, 503),
}


def episode_router(hosted: Hosted) -> APIRouter:
    service = hosted.service
    router = APIRouter(tags=["episodes"], route_class=JsonBodyRoute)
    tenant_of = hosted.tenant_dependency()

    async def owned_record(episode_id: str, tenant: str | None = Depends(tenant_of)) -> EpisodeRecord:
        """The stored episode if the caller owns it; 404 for a missing episode and for anyone else's alike."""
        try:
            # An id no episode can have is not looked up: it may hold what the store cannot query (NUL).
            record = await service.store.load_episode(episode_id) if EPISODE_ID.fullmatch(episode_id) else None
        except EpisodeNotFoundError:
            record = None
        if record is None or (hosted.api_keys is not None and record.tenant != tenant):
            raise ApiError(404, "not_found", f"no episode {episode_id!r} for this API key")
        return record

    owned = Depends(owned_record)

    @router.post(
        "/v1/episodes", status_code=201, summary="Start an episode of a task",
        description="Returns the episode's MCP URL and the bearer token that URL requires.",
        responses=error_responses(*BODY_ERRORS, 401, 403, 404, 429, 503),
    )
    async def create_episode(
        body: CreateEpisodeRequest, request: Request, tenant: str | None = Depends(tenant_of)
    ) -> CreateEpisodeResponse:
        try:
            chosen = hosted.settings.world_model_for(body.world_model, service.default_world_model().model)
        except ModelNotAllowedError as error:
            raise ApiError(403, "model_not_allowed", str(error)) from None
        try:
            with tenant_limits_answered():
                async with hosted.limits.opening_episode(tenant):
                    episode = await service.create(
                        body.task_id, world_model=chosen,
                        faults=body.fault_settings(), tenant=tenant,
                        mode=body.mode if "mode" in body.model_fields_set else hosted.service.default_mode,
                    )
        except UnknownTaskError as error:
            raise ApiError(404, "unknown_task", str(error)) from None
        except EpisodeError as error:
            raise ApiError(422, "invalid_episode", str(error)) from None
        base = (hosted.settings.public_url or str(request.base_url)).rstrip("/")
        return CreateEpisodeResponse(
            episode_id=episode.id, task_id=episode.task.id, token=hosted.tokens.issue(episode.id),
            mcp_url=base + MCP_PATH.format(episode_id=episode.id),
        )

    @router.get("/v1/episodes/{episode_id}", summary="An episode's status, steps and verdict",
                responses=error_responses(401, 404))
    async def episode_status(record: EpisodeRecord = owned) -> EpisodeView:
        return await _view(hosted, record)

    @router.post(
        "/v1/episodes/{episode_id}/submit", summary="Submit the final answer and close the episode",
        description="Judging (when the service has a judge model) runs afterwards.",
        responses=error_responses(*BODY_ERRORS, 401, 404, 409),
    )
    async def submit_episode(body: SubmitRequest, record: EpisodeRecord = owned) -> EpisodeView:
        episode = await service.open(record.id)
        try:
            submitted = await episode.submit(body.answer, run_judge=False)
        except EpisodeClosedError as error:
            raise ApiError(409, "episode_closed", str(error)) from None
        hosted.judging.start(episode)
        return await _view(hosted, submitted)

    async def mcp(
        episode_id: str, request: Request, token: HTTPAuthorizationCredentials | None = EPISODE_TOKEN_CREDENTIALS,
    ) -> Response:
        body = await request.body() if request.method == "POST" else None
        return await open_mcp_exchange(hosted, episode_id, credential=token.credentials if token else None,
                                       version=request.headers.get(MCP_PROTOCOL_VERSION_HEADER), body=body)

    for method in ("POST", "GET", "DELETE"):
        router.add_api_route(
            MCP_PATH, mcp, methods=[method], operation_id=f"mcp_{method.lower()}", tags=["mcp"],
            summary=f"The episode's MCP streamable-HTTP endpoint ({method})", responses=_MCP_RESPONSES,
            description="Speak MCP here with any client: protocol 2026-07-28 without a session, or the handshake "
            "era with an Mcp-Session-Id that every replica serves (GET answers 405: no server-sent stream; DELETE "
            "ends the session). Tools are the scenario's plus submit_result; tool calls count against the "
            "tenant's limits (429 with Retry-After).",
        )
        # The same endpoint with a trailing slash, as some clients write it: a redirect would lose POST bodies.
        router.add_api_route(MCP_PATH + "/", mcp, methods=[method], include_in_schema=False,
                             name=f"mcp_{method.lower()}_slash")
    return router


async def _view(hosted: Hosted, record: EpisodeRecord) -> EpisodeView:
    judgment = await hosted.service.store.load_judgment(record.id)
    return EpisodeView(
        episode_id=record.id, task_id=record.task_id, scenario_id=record.scenario_id, status=record.status,
        mode=record.mode, world_model=record.world_model, faults=record.faults, step_count=len(record.steps),
        steps=record.steps, final_answer=record.final_answer, created_at=record.created_at,
        closed_at=record.closed_at,
        verdict=Verdict.model_validate(judgment.verdict) if judgment is not None else None,
    )
