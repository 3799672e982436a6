"""The stateless judging service: `POST /v1/judge` with a task and a trajectory, answered with a Verdict."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from occusim.environments import EpisodeRecord, Scenario, Task, format_location
from occusim.llm import ModelConfig

from ._errors import JudgeError, JudgeModelError
from ._judge import MAX_VOTES, judge

JUDGE_PATH = "/v1/judge"
MAX_BODY_BYTES = 16 * 1024 * 1024

Endpoint = Callable[[Request], Awaitable[Response]]


class JudgeRequest(BaseModel):
    """The body of `POST /v1/judge`."""

    model_config = ConfigDict(extra="forbid")

    task: Task
    scenario: Scenario | None = Field(default=None, description="Gives the judge the domain rules.")
    trajectory: EpisodeRecord
    votes: int | None = Field(default=None, ge=1, le=MAX_VOTES, description="Votes per llm check.")
    seed: int = 0
    llm_items: Literal["judge", "skip"] = "judge"


class _BodyTooLarge(Exception):
    pass


def judge_endpoint(
    model: ModelConfig | str | None = None, *, votes: int = 3, max_body_bytes: int = MAX_BODY_BYTES
) -> Endpoint:
    """The route handler of `POST /v1/judge`, for an app that mounts it next to its own routes."""

    async def endpoint(request: Request) -> Response:
        try:
            body = await _read_body(request, max_body_bytes)
        except _BodyTooLarge:
            return _error(413, f"the request body is larger than the limit of {max_body_bytes} bytes")
        except ClientDisconnect:
            return _error(400, "the client disconnected before sending the whole body")
        try:
            data = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            return _error(400, f"the request body is not JSON: {error}")
        try:
            parsed = JudgeRequest.model_validate(data)
        except ValidationError as error:
            return _invalid(error)
        try:
            verdict = await judge(
                parsed.task,
                parsed.trajectory,
                scenario=parsed.scenario,
                model=model,
                votes=parsed.votes or votes,
                seed=parsed.seed,
                llm_items=parsed.llm_items,
            )
        except JudgeModelError as error:
            return _error(502, str(error))
        except JudgeError as error:
            return _error(422, str(error))
        return JSONResponse(verdict.model_dump(mode="json"))

    return endpoint


def judge_routes(
    model: ModelConfig | str | None = None, *, votes: int = 3, max_body_bytes: int = MAX_BODY_BYTES
) -> list[Route]:
    return [
        Route(JUDGE_PATH, judge_endpoint(model, votes=votes, max_body_bytes=max_body_bytes), methods=["POST"])
    ]


def judge_app(
    model: ModelConfig | str | None = None, *, votes: int = 3, max_body_bytes: int = MAX_BODY_BYTES
) -> Starlette:
    """A Starlette app serving only the judging service (what `occusim judge-serve` runs)."""
    return Starlette(routes=judge_routes(model, votes=votes, max_body_bytes=max_body_bytes))


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise _BodyTooLarge
    chunks = bytearray()
    async for chunk in request.stream():
        chunks.extend(chunk)
        if len(chunks) > limit:
            raise _BodyTooLarge
    return bytes(chunks)


def _error(status: int, message: str, errors: list[dict[str, Any]] | None = None) -> JSONResponse:
    payload: dict[str, Any] = {"error": message}
    if errors is not None:
        payload["errors"] = errors
    return JSONResponse(payload, status_code=status)


def _invalid(error: ValidationError) -> JSONResponse:
    errors = [
        {
            "loc": list(detail["loc"]),
            "field": format_location(detail["loc"]),
            "message": detail["msg"],
            "type": detail["type"],
        }
        for detail in error.errors(include_url=False, include_context=False, include_input=False)
    ]
    shown = "; ".join(f"{e['field'] or 'body'}: {e['message']}" for e in errors[:5])
    more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
    return _error(422, f"invalid request body: {shown}{more}", errors)
