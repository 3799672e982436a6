"""What the viewer shows: one index entry per episode, and one episode with everything recorded about it.

The pages are rendered from these, whatever the episodes are read from (a run folder, a store, a tenant's
episodes in the hosted service); each source fills them in its own `EpisodeSource`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import BaseModel, Field

from occusim.environments import EpisodeRecord, Usage
from occusim.judge import Verdict


class EpisodeEntry(BaseModel):
    """One line of the index."""

    episode_id: str | None = Field(description="None for a run's episode that never started (infra_error).")
    task_id: str
    scenario_id: str
    category: str = ""
    fault_mode: str
    trial: int | None = None
    world_model: str = ""
    agent_model: str = ""
    judge_model: str = ""
    status: str = Field(description="The run row's status (ok, unjudged, infra_error) or the episode's.")
    passed: bool | None = None
    score: float | None = None
    steps: int = 0
    faults: list[str] = Field(default_factory=list, description="Labels of the faults the agent met.")
    faults_planned: int | None = Field(default=None, description="Faults the server planned (None: not known).")
    faults_met: int | None = Field(default=None, description="Planned faults the episode met.")
    flags: list[str] = Field(default_factory=list, description="Kinds of the simulator audit's flags, if any.")
    error: str | None = None
    created_at: datetime | None = None


class EpisodeDetail(BaseModel):
    """One episode: its index entry, the record with every step (None when no store holds it), the verdict."""

    entry: EpisodeEntry
    record: EpisodeRecord | None = None
    verdict: Verdict | None = None
    usage: dict[str, Usage] = Field(default_factory=dict, description="By role: agent, world_model, judge.")
    final_answer: str | None = Field(default=None, description="The submitted answer, when no record holds it.")
    duration_s: float | None = None
    note: str | None = Field(default=None, description="Why something is missing, shown on the page.")
    instruction: str | None = Field(default=None, description="The task's instruction, where the catalog is known.")
    messages: list[dict[str, Any]] = Field(default_factory=list, description="The agent's messages, OpenAI format.")
    previous_id: str | None = Field(default=None, description="The episode listed before this one.")
    next_id: str | None = Field(default=None, description="The episode listed after this one.")
    report_href: str | None = Field(default=None, description="Where the run's report is, when it has one.")


class EpisodeSource(Protocol):
    """Where the viewer reads episodes from; read at each request, so a running batch shows as it goes."""

    title: str
    limited: bool  # the last `entries()` stopped at the source's limit (the newest episodes only)

    async def entries(self) -> list[EpisodeEntry]: ...

    async def episode(self, episode_id: str) -> EpisodeDetail | None: ...
