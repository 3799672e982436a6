"""Episode routes: create an episode, read its status and verdict, submit it, and its MCP endpoint.

A tenant only ever sees its own episodes: another tenant's episode answers 404 exactly like a missing
one, so ids do not leak.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from occusim.environments import EpisodeRecord, UnknownTaskError
from occusim.judge import Verdict

from ._api_models import CreateEpisodeRequest, CreateEpisodeResponse, EpisodeView, SubmitRequest
from ._errors import EpisodeClosedError, EpisodeError, EpisodeNotFoundError
from ._http_api import ApiError, ApiRoute, Hosted, Operation, model_response, read_model

MCP_PATH = "/v1/episodes/{episode_id}/mcp"

CREATE = Operation(
    "POST", "/v1/episodes", "Start an episode of a task", CreateEpisodeResponse, CreateEpisodeRequest,
    status=201, errors=(404,),
    description="Returns the episode's MCP URL and the bearer token that URL requires.",
)
STATUS = Operation("GET", "/v1/episodes/{episode_id}", "An episode's status, steps and verdict", EpisodeView,
                   errors=(404,))
SUBMIT = Operation(
    "POST", "/v1/episodes/{episode_id}/submit", "Submit the final answer and close the episode", EpisodeView,
    SubmitRequest, errors=(404, 409), description="Judging (when the service has a judge model) runs afterwards.",
)
MCP = Operation(
    "POST", MCP_PATH, "The episode's MCP streamable-HTTP endpoint (also GET and DELETE for legacy sessions)",
    None, auth="episode_token", errors=(404, 413), tag="mcp",
    description="Speak MCP here with any client: protocol 2026-07-28 without a session, or the handshake era "
    "with an Mcp-Session-Id. Tools are the scenario's plus submit_result.",
)


def episode_routes(hosted: Hosted) -> list[Route]:
    service = hosted.service

    async def create(request: Request) -> Response:
        tenant = hosted.tenant(request)
        body = await read_model(request, CreateEpisodeRequest)
        try:
            episode = await service.create(
                body.task_id, world_model=body.world_model or hosted.settings.world_model,
                faults=body.fault_settings(), mode=body.mode, tenant=tenant,
            )
        except UnknownTaskError as error:
            raise ApiError(404, "unknown_task", str(error)) from None
        except EpisodeError as error:
            raise ApiError(422, "invalid_episode", str(error)) from None
        base = (hosted.settings.public_url or str(request.base_url)).rstrip("/")
        created = CreateEpisodeResponse(
            episode_id=episode.id, task_id=episode.task.id, token=hosted.tokens.issue(episode.id),
            mcp_url=base + MCP_PATH.format(episode_id=episode.id),
        )
        return model_response(created, status=201)

    async def status(request: Request) -> Response:
        tenant = hosted.tenant(request)
        record = await _owned_record(hosted, request.path_params["episode_id"], tenant)
        return model_response(await _view(hosted, record))

    async def submit(request: Request) -> Response:
        tenant = hosted.tenant(request)
        episode_id = request.path_params["episode_id"]
        await _owned_record(hosted, episode_id, tenant)
        body = await read_model(request, SubmitRequest)
        episode = await service.open(episode_id)
        try:
            record = await episode.submit(body.answer, run_judge=False)
        except EpisodeClosedError as error:
            raise ApiError(409, "episode_closed", str(error)) from None
        hosted.judging.start(episode)
        return model_response(await _view(hosted, record))

    return [
        ApiRoute(CREATE, create),
        ApiRoute(STATUS, status),
        ApiRoute(SUBMIT, submit),
        Route(MCP_PATH, hosted.endpoints, methods=["GET", "POST", "DELETE"]),
    ]


async def _owned_record(hosted: Hosted, episode_id: str, tenant: str | None) -> EpisodeRecord:
    """The stored episode if `tenant` owns it; 404 for a missing episode and for anyone else's alike."""
    try:
        record = await hosted.service.store.load_episode(episode_id)
    except EpisodeNotFoundError:
        record = None
    if record is None or (hosted.api_keys is not None and record.tenant != tenant):
        raise ApiError(404, "not_found", f"no episode {episode_id!r} for this API key")
    return record


async def _view(hosted: Hosted, record: EpisodeRecord) -> EpisodeView:
    judgment = await hosted.service.store.load_judgment(record.id)
    return EpisodeView(
        episode_id=record.id, task_id=record.task_id, scenario_id=record.scenario_id, status=record.status,
        mode=record.mode, world_model=record.world_model, faults=record.faults, step_count=len(record.steps),
        steps=record.steps, final_answer=record.final_answer, created_at=record.created_at,
        closed_at=record.closed_at,
        verdict=Verdict.model_validate(judgment.verdict) if judgment is not None else None,
    )
