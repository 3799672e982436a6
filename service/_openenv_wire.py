"""OpenEnv's wire shapes as occusim speaks them: the reset and step bodies, the MCP actions, the observations,
the state and the WebSocket frames of `/ws`, each defined once (read from OpenEnv's own server and client)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from occusim.environments import FaultMode


class _Wire(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResetRequest(_Wire):
    """The body of POST /reset and the `data` of a WebSocket `reset` frame: which episode to open."""

    task_id: str | None = Field(default=None, description="The task to play; default the first task served.")
    faults: FaultMode | None = Field(
        default=None, description="Fault mode E0-E3 or prompt; default the server's."
    )
    seed: int | None = Field(
        default=None,
        ge=0,
        description="Seed of the faults and of the world model's requests; default the server's, so that a "
        "group of rollouts of one task shares it and differs only by the policy.",
    )
    episode_id: str | None = Field(
        default=None, max_length=64, description="Use this episode id (default random)."
    )


class ListToolsAction(_Wire):
    """OpenEnv's MCP action that lists the episode's tools."""

    type: Literal["list_tools"] = "list_tools"
    metadata: dict[str, Any] = Field(default_factory=dict)


class CallToolAction(_Wire):
    """OpenEnv's MCP action that calls one tool; `submit_result` ends the episode and it is judged."""

    type: Literal["call_tool"] = "call_tool"
    tool_name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    metadata: dict[str, Any] = Field(default_factory=dict)


Action = Annotated[ListToolsAction | CallToolAction, Field(discriminator="type")]


class ActionMessage(_Wire):
    """An action on its own, as the `data` of a WebSocket `step` frame."""

    action: Action


class StepRequest(_Wire):
    """The body of POST /step."""

    action: Action
    timeout_s: float | None = Field(default=None, gt=0, description="Accepted for OpenEnv's clients; unused.")
    request_id: str | None = Field(default=None, max_length=255)


class ToolSpec(_Wire):
    """A tool as OpenEnv lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class Verdict(_Wire):
    """The judge's verdict on a submitted episode, as the final observation's metadata carries it."""

    episode_id: str
    status: str = Field(description="judged, or submitted when no verdict could be reached")
    score: float | None = Field(default=None, description="The reward: the rubric's weighted score.")
    passed: bool | None = None
    unjudged: str | None = Field(default=None, description="Why there is no reward, when there is none.")


class _Observation(_Wire):
    done: bool = False
    reward: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class ResetObservation(_Observation):
    """What a reset answers: the opened episode, its task as the agent reads it, and its tools."""

    episode_id: str | None = Field(description="None over stateless HTTP, where no episode is opened.")
    task_id: str
    prompt: str = Field(description="The task as the agent reads it.")
    tools: list[ToolSpec]


class ListToolsObservation(_Observation):
    tools: list[ToolSpec]


class CallToolObservation(_Observation):
    """One tool call's result, as text (the JSON of the tool's answer, or its typed error)."""

    tool_name: str
    result: str
    is_error: bool


Observation = ResetObservation | ListToolsObservation | CallToolObservation


class StepResponse(_Wire):
    """The body of a reset or step answer (OpenEnv's ResetResponse and StepResponse have this one shape)."""

    observation: dict[str, Any]
    reward: float | None = None
    done: bool = False
    metadata: dict[str, Any] | None = None

    @classmethod
    def of(cls, observation: Observation) -> StepResponse:
        fields = observation.model_dump(mode="json", exclude={"reward", "done"})
        return cls(
            observation=fields,
            reward=observation.reward,
            done=observation.done,
            metadata=observation.metadata or None,
        )


class EpisodeState(BaseModel):
    """GET /state and the WebSocket `state` answer: OpenEnv's State with the episode's own fields."""

    model_config = ConfigDict(extra="forbid")

    episode_id: str | None = None
    step_count: int = 0
    task_id: str | None = None
    faults: FaultMode | None = None
    seed: int | None = None
    status: str | None = Field(default=None, description="open, submitted, judged or expired")
    reward: float | None = None


class HealthResponse(_Wire):
    status: Literal["healthy"] = "healthy"


class SchemaResponse(_Wire):
    """The JSON Schemas of the actions, observations and state, generated from these models."""

    action: dict[str, Any]
    observation: dict[str, Any]
    reset_observation: dict[str, Any]
    state: dict[str, Any]


class ResetFrame(_Wire):
    type: Literal["reset"]
    data: dict[str, Any] = Field(default_factory=dict)


class StepFrame(_Wire):
    type: Literal["step"]
    data: dict[str, Any]


class StateFrame(_Wire):
    type: Literal["state"]


class CloseFrame(_Wire):
    type: Literal["close"]


IncomingFrame = Annotated[ResetFrame | StepFrame | StateFrame | CloseFrame, Field(discriminator="type")]


class ClientFrame(_Wire):
    frame: IncomingFrame


class ObservationFrame(_Wire):
    type: Literal["observation"] = "observation"
    data: StepResponse


class StateAnswerFrame(_Wire):
    type: Literal["state"] = "state"
    data: EpisodeState


class ErrorDetail(BaseModel):
    model_config = ConfigDict(extra="allow")

    message: str
    code: str = Field(
        description="OpenEnv's codes: INVALID_JSON, UNKNOWN_TYPE, VALIDATION_ERROR, EXECUTION_ERROR"
    )


class ErrorFrame(_Wire):
    type: Literal["error"] = "error"
    data: ErrorDetail
