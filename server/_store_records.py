"""What the store returns besides the shared episode records: episode summaries and judgments."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from occusim.environments import EpisodeStatus, FaultSettings, SimulationMode


class EpisodeSummary(BaseModel):
    """One row of `Store.list_episodes`: an episode without its steps."""

    id: str
    task_id: str
    scenario_id: str
    status: EpisodeStatus
    world_model: str
    mode: SimulationMode
    faults: FaultSettings = Field(default_factory=FaultSettings)
    tenant: str | None = None
    step_count: int = 0
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None


class Judgment(BaseModel):
    """A stored verdict (the judge's JSON as it was saved) with the model and prompt version that made it."""

    episode_id: str
    verdict: dict[str, Any]
    judge_model: str | None = None
    prompt_version: str | None = None
    score: float | None = None
    passed: bool | None = None
    created_at: datetime
