"""`occusim serve --openenv`: the catalog's tasks as OpenEnv environments, spoken natively (no `openenv` import).

Real episodes run over the WebSocket `/ws`, one episode at a time per connection and any number of
connections at once; POST /reset and /step are stateless, as in OpenEnv (a fresh environment per request).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI, WebSocket, WebSocketDisconnect
from pydantic import TypeAdapter, ValidationError

from occusim.environments import OccusimError, UnknownTaskError
from occusim.rest import ApiError, JsonBodyRoute, error_responses, rest_app
from occusim.server import EpisodeError, EpisodeService

from ._idle_expiry import expire_idle_forever
from ._openenv_env import EpisodeDefaults, EpisodeEnv
from ._openenv_wire import (
    Action,
    ActionMessage,
    CallToolObservation,
    ClientFrame,
    CloseFrame,
    EpisodeState,
    ErrorDetail,
    ErrorFrame,
    HealthResponse,
    ListToolsAction,
    ObservationFrame,
    ResetFrame,
    ResetObservation,
    ResetRequest,
    SchemaResponse,
    StateAnswerFrame,
    StateFrame,
    StepRequest,
    StepResponse,
)

log = logging.getLogger("occusim.server")
_ACTION: TypeAdapter[Action] = TypeAdapter(Action)
_STATELESS_CALL = (
    "POST /step is stateless in OpenEnv (a fresh environment per request), and a tool call needs an open "
    "episode: play episodes over the WebSocket /ws (GenericEnvClient does), reset first, then step"
)


def create_openenv_app(
    service: EpisodeService, defaults: EpisodeDefaults, *, max_body_bytes: int = 1 << 20,
    episode_idle_seconds: float = 1800.0,
) -> FastAPI:
    """The OpenEnv server over `service`: its store is initialised and closed with the app's lifespan, and
    episodes left open without a step for `episode_idle_seconds` expire (abandoned rollouts, dropped sockets)."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await service.store.init()
        # Looked for a few times per idle period, at most once a minute.
        expiring = asyncio.create_task(
            expire_idle_forever(service, episode_idle_seconds, min(60.0, episode_idle_seconds / 4))
        )
        try:
            yield
        finally:
            expiring.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await expiring
            await service.store.close()

    router = APIRouter(route_class=JsonBodyRoute, tags=["OpenEnv"])

    @router.post("/reset", responses=error_responses(404, 409, 422))
    async def reset(request: ResetRequest | None = None) -> StepResponse:
        """Say what a reset opens (task, prompt, tools) without opening it: over HTTP nothing outlives the request."""
        observation = await _answering(
            EpisodeEnv(service, defaults).reset(request or ResetRequest(), open_episode=False)
        )
        return StepResponse.of(observation)

    @router.post("/step", responses=error_responses(409, 422))
    async def step(request: StepRequest) -> StepResponse:
        """list_tools answers with the first task's tools; a call_tool needs an episode, hence /ws."""
        if not isinstance(request.action, ListToolsAction):
            raise ApiError(409, "no_episode", _STATELESS_CALL)
        observation = await EpisodeEnv(service, defaults).reset(ResetRequest(), open_episode=False)
        return StepResponse.of(observation)

    @router.get("/state")
    async def state() -> EpisodeState:
        """A fresh environment's state: no episode (episodes live in /ws sessions)."""
        return EpisodeState()

    @router.get("/health")
    async def health() -> HealthResponse:
        return HealthResponse()

    @router.get("/schema")
    async def schema() -> SchemaResponse:
        return SchemaResponse(
            action=_ACTION.json_schema(),
            observation=CallToolObservation.model_json_schema(),
            reset_observation=ResetObservation.model_json_schema(),
            state=EpisodeState.model_json_schema(),
        )

    app = rest_app(
        title="occusim OpenEnv",
        description="occusim's tasks as OpenEnv environments: reset, step, state, /ws.",
        routers=[router],
        max_body_bytes=max_body_bytes,
        body_limit_setting="the server's body limit",
        lifespan=lifespan,
    )

    @app.websocket("/ws")
    async def sessions(websocket: WebSocket) -> None:
        await websocket.accept()
        await _play(websocket, EpisodeEnv(service, defaults))

    return app


async def _play(websocket: WebSocket, env: EpisodeEnv) -> None:
    """One WebSocket session: answer each frame in turn until the client closes it."""
    try:
        while True:
            raw = await websocket.receive_text()
            answer = await _answer(env, raw)
            if answer is None:
                break
            await websocket.send_text(answer.model_dump_json())
    except WebSocketDisconnect:
        pass
    finally:
        if env.episode is not None and not env.episode.closed:
            log.info(
                "an OpenEnv session ended leaving episode %s open after %d steps",
                env.episode.id,
                len(env.episode.record.steps),
            )
        env.leave()


async def _answer(env: EpisodeEnv, raw: str) -> ObservationFrame | StateAnswerFrame | ErrorFrame | None:
    """The answer to one frame; None for `close`."""
    try:
        frame = ClientFrame.model_validate_json(f'{{"frame": {raw}}}').frame
    except ValidationError as error:
        code = (
            "INVALID_JSON" if any(e["type"] == "json_invalid" for e in error.errors()) else "VALIDATION_ERROR"
        )
        if code == "VALIDATION_ERROR" and _frame_type(raw) not in ("reset", "step", "state", "close"):
            return _error(
                f"unknown message type {_frame_type(raw)!r}; send reset, step, state or close", "UNKNOWN_TYPE"
            )
        return _error(_problems(error), code)
    if isinstance(frame, CloseFrame):
        return None
    if isinstance(frame, ResetFrame):
        try:
            request = ResetRequest.model_validate(frame.data)
        except ValidationError as error:
            return _error(_problems(error), "VALIDATION_ERROR")
        return await _observed(env.reset(request))
    if isinstance(frame, StateFrame):
        return StateAnswerFrame(data=env.state())
    try:
        action = ActionMessage.model_validate({"action": frame.data}).action
    except ValidationError as error:
        return _error(_problems(error), "VALIDATION_ERROR")
    return await _observed(env.step(action))


async def _observed(pending: Any) -> ObservationFrame | ErrorFrame:
    try:
        return ObservationFrame(data=StepResponse.of(await pending))
    except OccusimError as error:
        return _error(error.user_message(), "EXECUTION_ERROR")


async def _answering(pending: Any) -> Any:
    """The awaited result, with the errors of a reset as HTTP errors."""
    try:
        return await pending
    except UnknownTaskError as error:
        raise ApiError(404, "unknown_task", str(error)) from None
    except EpisodeError as error:
        raise ApiError(409, "episode_error", str(error)) from None


def _frame_type(raw: str) -> object:
    try:
        return TypeAdapter(dict[str, Any]).validate_json(raw).get("type")
    except ValidationError:
        return None


def _problems(error: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'message'}: {e['msg']}" for e in error.errors())


def _error(message: str, code: str) -> ErrorFrame:
    return ErrorFrame(data=ErrorDetail(message=message, code=code))
