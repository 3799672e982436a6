"""The stateless judging service: `POST /v1/judge` with a task and a trajectory, answered with a Verdict."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Literal

from fastapi import APIRouter, FastAPI, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.middleware import Middleware

from occusim.environments import EpisodeRecord, Scenario, Task
from occusim.llm import ModelConfig
from occusim.rest import BODY_ERRORS, ApiError, JsonBodyRoute, error_responses, rest_app

from ._errors import JudgeError, JudgeModelError
from ._judge import MAX_VOTES, judge
from ._verdict import Verdict

JUDGE_PATH = "/v1/judge"
MAX_BODY_BYTES = 16 * 1024 * 1024


class JudgeRequest(BaseModel):
    """The body of `POST /v1/judge`."""

    model_config = ConfigDict(extra="forbid")

    task: Task
    scenario: Scenario | None = Field(default=None, description="Gives the judge the domain rules.")
    trajectory: EpisodeRecord
    votes: int | None = Field(default=None, ge=1, le=MAX_VOTES, description="Votes per llm check.")
    seed: int = 0
    llm_items: Literal["judge", "skip"] = "judge"

    def model_calls(self, default_votes: int) -> int:
        """The most model calls judging this request can make (before re-asks), at least 1 to count it."""
        if self.llm_items == "skip":
            return 1
        llm_checks = sum(1 for item in self.task.rubric.items if item.kind == "llm")
        return max(1, llm_checks * (self.votes or default_votes))


# What a service that meters its callers holds around each judgment: given the request and the most model
# calls it can make, it admits or refuses it (raising ApiError) and yields what to tell the verdict's cost.
JudgeMeter = Callable[[Request, int], AbstractAsyncContextManager[Callable[[Verdict], Awaitable[None]]]]


def judge_router(model: ModelConfig | str | None = None, *, votes: int = 3, meter: JudgeMeter | None = None) -> APIRouter:
    """`POST /v1/judge`, for an app that serves it next to its own routes; `meter` is held around each judgment."""
    router = APIRouter(tags=["judge"], route_class=JsonBodyRoute)

    @router.post(
        JUDGE_PATH, summary="Judge a trajectory against a task (stateless)",
        responses=error_responses(*BODY_ERRORS, 409, 502, *((429, 503) if meter is not None else ())),
        description="409: the task and the trajectory do not fit together (another task's run, a reserved "
        "rubric item id). 502: the judge model could not be reached; nothing was scored."
        + (" 429: the caller's per-minute limit or daily spend cap (Retry-After). 503: its limits cannot be "
           "checked." if meter is not None else ""),
    )
    async def judge_trajectory(body: JudgeRequest, request: Request) -> Verdict:
        if meter is None:
            return await _judged(body)
        async with meter(request, body.model_calls(votes)) as spent:
            verdict = await _judged(body)
            await spent(verdict)
        return verdict

    async def _judged(body: JudgeRequest) -> Verdict:
        try:
            return await judge(
                body.task, body.trajectory, scenario=body.scenario, model=model, votes=body.votes or votes,
                seed=body.seed, llm_items=body.llm_items,
            )
        except JudgeModelError as error:
            raise ApiError(502, "judge_model_unavailable", str(error)) from None
        except JudgeError as error:
            raise ApiError(409, "unjudgeable", str(error)) from None

    return router


def judge_app(
    model: ModelConfig | str | None = None, *, votes: int = 3, max_body_bytes: int = MAX_BODY_BYTES,
    middleware: Sequence[Middleware] = (),
) -> FastAPI:
    """The judging service alone (what `occusim judge-serve` runs), with its OpenAPI document; `middleware`
    runs in front of it (the Host check, say)."""
    return rest_app(
        title="occusim judge", description="Scores a recorded episode against its task's rubric.",
        routers=[judge_router(model, votes=votes)], max_body_bytes=max_body_bytes,
        body_limit_setting="--max-body-mb of occusim judge-serve", middleware=middleware,
    )
