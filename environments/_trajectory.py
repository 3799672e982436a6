"""The recorded episode: every step as the agent saw it, with the truth beside any injected fault.

This is the one format shared by the server (which writes it), the judge (which scores it) and the
clients (which export it). The server's tables follow these models field by field (server/_tables.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from ._step_flag import StepFlag

FaultMode = Literal["E0", "E1", "E2", "E3", "prompt"]
SimulationMode = Literal["tracked", "history", "occubench"]
# How an episode is run: occusim's own agent, world model and judge, or OccuBench's harness replicated. A
# protocol's episodes are in its modes (occubench: the `occubench` mode; native: `tracked` or `history`).
ProtocolName = Literal["native", "occubench"]
EpisodeStatus = Literal["open", "submitted", "judged", "expired"]


class FaultSettings(BaseModel):
    """How faults are injected: mode E0 (clean) to E3 (mixed), how many, for how long, from which seed."""

    mode: FaultMode = "E0"
    count: int = Field(default=2, ge=0, le=100)
    duration: int = Field(default=2, ge=1, le=100, description="Consecutive calls each fault lasts.")
    seed: int = 0
    window: int | None = Field(
        default=None, ge=1, le=500,
        description="Calls over which the faults are spread; default the task's expected length (see docs/metrics.md).",
    )


class InjectedFault(BaseModel):
    """What was done to one step's observation."""

    kind: Literal["explicit", "implicit", "prompt"]
    label: str = Field(description="e.g. http_500, timeout, truncate_list, drop_fields, null_fields, stale")
    detail: str = ""


class Usage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    calls: int = 0
    cached_calls: int = 0
    prompt_tokens_reused: int = Field(
        default=0, description="Prompt tokens the provider took from its prompt cache instead of reading them again."
    )


class StepRecord(BaseModel):
    index: int
    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str | None = Field(
        default=None, description="The arguments as the agent's own JSON string (occubench mode)."
    )
    observation: Any = Field(description="What the agent was shown.")
    is_error: bool = False
    true_observation: Any = Field(default=None, description="The simulator's true answer, when it differs.")
    fault: InjectedFault | None = None
    error: str | None = Field(default=None, description="Why the call failed (validation or simulator error).")
    state_patch: list[dict[str, Any]] = Field(default_factory=list)
    state_hash: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = 0.0
    flags: list[StepFlag] = Field(
        default_factory=list, description="What the per-step audit found wrong with the simulated answer."
    )
    created_at: datetime | None = None


class EpisodeRecord(BaseModel):
    id: str
    task_id: str
    scenario_id: str
    status: EpisodeStatus = "open"
    world_model: str = ""
    mode: SimulationMode = "tracked"
    faults: FaultSettings = Field(default_factory=FaultSettings)
    initial_state: dict[str, Any] = Field(default_factory=dict)
    state: dict[str, Any] = Field(default_factory=dict, description="The current (after submit: final) state.")
    steps: list[StepRecord] = Field(default_factory=list)
    final_answer: str | None = None
    tenant: str | None = None
    created_at: datetime | None = None
    closed_at: datetime | None = None
