"""Request and response bodies of the hosted service; the routes validate with these and the OpenAPI
document is generated from them (the error body is occusim.rest.ErrorBody)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from occusim.environments import EpisodeStatus, FaultMode, FaultSettings, SimulationMode, StepRecord
from occusim.judge import Verdict


class CreateEpisodeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task_id: str = Field(min_length=1, max_length=200, description="A task id from GET /v1/tasks.")
    world_model: str | None = Field(
        default=None, min_length=1, max_length=300,
        description="Model simulating the tools: the service's default when unset, else one the operator offers.",
    )
    faults: FaultMode = Field(default="E0", description="E0 clean, E1 explicit, E2 implicit, E3 mixed, or prompt.")
    fault_count: int = Field(default=2, ge=0, le=100)
    fault_duration: int = Field(default=2, ge=1, le=100)
    fault_window: int | None = Field(
        default=None, ge=1, le=500,
        description="Calls over which the faults are spread; default the task's expected length (docs/metrics.md).",
    )
    # The integers every JSON reader holds exactly (IEEE doubles), so the seed survives any client.
    seed: int = Field(default=0, ge=-(2**53 - 1), le=2**53 - 1)
    mode: SimulationMode = "tracked"

    def fault_settings(self) -> FaultSettings:
        return FaultSettings(mode=self.faults, count=self.fault_count, duration=self.fault_duration,
                             window=self.fault_window, seed=self.seed)


class CreateEpisodeResponse(BaseModel):
    episode_id: str
    task_id: str
    mcp_url: str = Field(description="The episode's MCP streamable-HTTP endpoint.")
    token: str = Field(description="Bearer token for mcp_url; shown once, never stored.")


class SubmitRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = Field(description="The final answer, as the agent would pass it to submit_result.")


class EpisodeView(BaseModel):
    episode_id: str
    task_id: str
    scenario_id: str
    status: EpisodeStatus
    mode: SimulationMode
    world_model: str
    faults: FaultSettings
    step_count: int
    steps: list[StepRecord] = Field(description="Every tool call, with any injected fault beside the truth.")
    final_answer: str | None = None
    verdict: Verdict | None = Field(default=None, description="The judge's verdict once judged.")
    created_at: datetime | None = None
    closed_at: datetime | None = None


class TaskSummary(BaseModel):
    id: str
    scenario: str
    category: str
    title: str
    difficulty: int
    max_steps: int


class ScenarioSummary(BaseModel):
    id: str
    name: str
    category: str
    domain: str
    occupation: str
    summary: str
    tools: list[str]
    tasks: list[str]


class TaskList(BaseModel):
    tasks: list[TaskSummary]


class ScenarioList(BaseModel):
    scenarios: list[ScenarioSummary]


class TenantLimits(BaseModel):
    """What one tenant may consume; a limit left unset (null) does not apply."""

    model_config = ConfigDict(extra="forbid")

    open_episodes: int | None = Field(default=None, ge=0, description="Episodes open at once.")
    tool_calls_per_minute: int | None = Field(
        default=None, ge=0, description="MCP tool calls per calendar minute (UTC), over all the tenant's episodes.",
    )
    cost_per_day_usd: float | None = Field(
        default=None, ge=0, description="Model spend (world model and judge) per UTC day; once reached, no new episode or tool call.",
    )


class TenantUsage(BaseModel):
    """What a tenant has consumed, counted across every replica that shares the store and Redis."""

    tenant: str | None = Field(description="The API key's tenant; null when the service runs without auth.")
    open_episodes: int
    tool_calls_this_minute: int
    cost_today_usd: float = Field(description="Model spend (world model and judge) since 00:00 UTC.")
    limits: TenantLimits = Field(description="The limits that apply to this tenant.")
    minute_resets_in_seconds: float = Field(description="When tool_calls_this_minute starts again from 0.")
    day_resets_in_seconds: float = Field(description="When cost_today_usd starts again from 0.")


class Health(BaseModel):
    status: Literal["ok", "unavailable"] = Field(
        default="ok", description="unavailable (answered 503) when a dependency cannot be reached.")
    version: str
    tasks: int
    open_endpoints: int = Field(description="Episodes with a live MCP endpoint in this process.")
    dependencies: dict[str, Literal["ok", "unavailable"]] = Field(
        default_factory=dict, description="store, and redis when usage is shared: whether this process reaches "
        "them (the cause is in the service's log).")


class ViewerLinkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    episode_id: str | None = Field(
        default=None, max_length=64, description="Open this episode's page; the index when unset.")
    ttl_seconds: int = Field(default=900, ge=30, le=86400, description="How long the link works, in seconds.")


class ViewerLinkResponse(BaseModel):
    url: str = Field(description="Open in a browser: it grants the caller's episodes until expires_at.")
    expires_at: datetime
