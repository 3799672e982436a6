"""The protocol seam: how an episode's calls are simulated, presented and judged, and occusim's own protocol.

A protocol is chosen once where the program is assembled (`occusim run`, `occusim serve`, `create_app`);
the episode, its MCP server and the service call it and never ask which one it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from occusim.environments import (
    SUBMIT_TOOL,
    Catalog,
    EpisodeRecord,
    ProtocolName,
    Scenario,
    SimulationMode,
    StepRecord,
    Task,
)

from ._errors import EpisodeError, SimulatorError
from ._world_model import WorldModel

# The modes occusim's own world model simulates: with the state tracked, or from the call history alone.
NATIVE_MODES: tuple[SimulationMode, ...] = ("tracked", "history")

JudgeHook = Callable[[Task, Scenario, EpisodeRecord], Awaitable[BaseModel]]


@dataclass
class StepOutcome:
    """What one tool call returns: the observation the agent sees, whether it is an error, and the record.

    The observation is an object, or text where the protocol keeps the world model's answer verbatim.
    """

    observation: dict[str, Any] | str
    is_error: bool
    record: StepRecord


class SteppedEpisode(Protocol):
    """What a protocol reads and calls of an `Episode` to present it and to run one of its steps."""

    @property
    def id(self) -> str: ...

    record: EpisodeRecord
    task: Task
    scenario: Scenario
    world_model: WorldModel

    async def simulate(self, index: int, tool: str, arguments: dict[str, Any] | None) -> StepOutcome: ...

    def new_step(self, index: int, tool: str, arguments: Any, observation: Any, *, is_error: bool,
                 error: str | None = None) -> StepRecord: ...

    def simulator_failure(self, index: int, tool: str, arguments: dict[str, Any],
                          error: SimulatorError) -> StepRecord: ...

    async def commit(self, step: StepRecord, state: dict[str, Any],
                     new_hash: str | None = None) -> StepOutcome: ...

    def holding_spend(self) -> AbstractAsyncContextManager[None]: ...


@runtime_checkable
class SimulationProtocol(Protocol):
    """What varies between occusim's protocol and a replicated harness, on the side of the episodes."""

    name: ProtocolName

    def episode_mode(self, requested: SimulationMode | None) -> SimulationMode:
        """The mode of a new episode when `requested` (None: nothing) was asked for."""
        ...

    def check_episode(self, task_id: str, scenario: Scenario, mode: SimulationMode) -> None:
        """Raise EpisodeError when an episode of this task cannot run in `mode` under this protocol."""
        ...

    def brief(self, episode: SteppedEpisode) -> str:
        """The task as the agent reads it (instructions, the `task` prompt and the resource)."""
        ...

    def advertises_output_schemas(self, episode: SteppedEpisode) -> bool:
        """Whether the episode's tools list their output schemas (their results are then objects)."""
        ...

    async def step(self, episode: SteppedEpisode, index: int, tool: str, arguments: dict[str, Any] | None,
                   raw_arguments: str | None) -> StepOutcome:
        """Simulate and commit one call whose arguments were accepted as JSON; see `Episode.step`."""
        ...

    def judge_hook(self, model: str | None, catalog: Catalog, *, votes: int = 3) -> JudgeHook | None:
        """The hook that scores a submitted episode with `model`; None without a model."""
        ...

    def serve_arguments(self, mode: SimulationMode) -> list[str]:
        """The `occusim serve` flags that run an episode of `mode` under this protocol in another process."""
        ...


def judge_hook(model: str | None, *, votes: int = 3) -> JudgeHook | None:
    """A hook that scores a submitted episode with `model`; None (episodes stay unjudged) without a model."""
    if not model:
        return None

    async def hook(task: Task, scenario: Scenario, record: EpisodeRecord) -> BaseModel:
        from occusim.judge import judge

        return await judge(task, record, scenario=scenario, model=model, votes=votes)

    return hook


class NativeSimulation:
    """occusim's own protocol: its world model (tracked or history), its faults, task brief and judge."""

    name: ProtocolName = "native"

    def episode_mode(self, requested: SimulationMode | None) -> SimulationMode:
        return requested or "tracked"

    def check_episode(self, task_id: str, scenario: Scenario, mode: SimulationMode) -> None:
        if mode not in NATIVE_MODES:
            raise EpisodeError(f"mode {mode!r} is not one this server simulates ({', '.join(NATIVE_MODES)}); "
                               f"it needs a server started with --protocol {mode}")

    def brief(self, episode: SteppedEpisode) -> str:
        scenario, task = episode.scenario, episode.task
        return (
            f"You are working as a {scenario.occupation} ({scenario.name}).\n\n"
            f"{task.instruction.strip()}\n\n"
            f"Use the tools to do the work. When you are done, call `{SUBMIT_TOOL}` once with your final answer; "
            f"the episode then closes. You have at most {task.max_steps} tool calls."
        )

    def advertises_output_schemas(self, episode: SteppedEpisode) -> bool:
        return True

    async def step(self, episode: SteppedEpisode, index: int, tool: str, arguments: dict[str, Any] | None,
                   raw_arguments: str | None) -> StepOutcome:
        if episode.record.mode not in NATIVE_MODES:
            raise EpisodeError(f"episode {episode.id} uses the {episode.record.mode} mode, which this server does "
                               f"not simulate: serve with --protocol {episode.record.mode} and its --source")
        return await episode.simulate(index, tool, arguments)

    def judge_hook(self, model: str | None, catalog: Catalog, *, votes: int = 3) -> JudgeHook | None:
        return judge_hook(model, votes=votes)

    def serve_arguments(self, mode: SimulationMode) -> list[str]:
        return ["--mode", mode]


NATIVE = NativeSimulation()
