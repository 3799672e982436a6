"""Running one combination of a batch as an MCP episode: the agent plays it, infrastructure failures retried."""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import ClassVar

from mcp.shared.exceptions import MCPError

from occusim.analysis import Combination, RunConfig
from occusim.environments import (
    EpisodeRecord,
    FaultSettings,
    OccusimError,
    StepRecord,
    ToolErrorType,
    read_tool_error,
)
from occusim.judge import JudgeModelError
from occusim.llm import ModelConfig, ProviderError, UsageLedger, sum_usage
from occusim.server import Store

from ._agent import Agent
from ._batch_plan import Selection
from ._conversation import AgentRun
from ._replay_agent import ReplayAgent
from ._setup_errors import world_model_setup_error
from ._transports import EpisodeTransport

log = logging.getLogger("occusim.clients")

# The error types of a step the world model gave no usable answer for: it gave up after its repairs, or
# its provider could not be reached (an outage, outside the agent's control).
_SIMULATOR_ERRORS = (ToolErrorType.SIMULATOR_ERROR, ToolErrorType.SIMULATOR_UNAVAILABLE)


class InfraError(OccusimError):
    """The episode could not be run properly for reasons outside the agent: never scored against it."""

    # The work failed (a model or the infrastructure), not the user's input.
    exit_code: ClassVar[int] = 1


@dataclass
class PlayedEpisode:
    """An episode the agent played to its submission: its record and the agent's conversation."""

    record: EpisodeRecord
    run: AgentRun


def _error_type(step: StepRecord) -> str | None:
    error = read_tool_error(step.observation)
    return error.type if error is not None else None


def is_simulator_error(step: StepRecord) -> bool:
    """A step whose world model gave no usable answer (repairs exhausted or provider down)."""
    return _error_type(step) in _SIMULATOR_ERRORS


def is_world_model_outage(step: StepRecord) -> bool:
    """A step whose world model's provider could not be reached: the runtime's `simulator_unavailable`."""
    return _error_type(step) == ToolErrorType.SIMULATOR_UNAVAILABLE


def infra_failure(error: BaseException) -> bool:
    """Whether `error` is an infrastructure failure (retried, labelled infra_error) rather than a bug."""
    if isinstance(error, BaseExceptionGroup):
        return all(infra_failure(inner) for inner in error.exceptions)
    import anyio
    import httpx

    return isinstance(error, (InfraError, ProviderError, JudgeModelError, TimeoutError, OSError, MCPError,
                              httpx.HTTPError, anyio.ClosedResourceError, anyio.BrokenResourceError,
                              anyio.EndOfStream))


def describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        return describe(error.exceptions[0])
    if isinstance(error, TimeoutError) and not str(error):
        return "TimeoutError: the episode ran past --episode-timeout"
    return f"{type(error).__name__}: {error}"


def fault_settings(config: RunConfig, combo: Combination) -> FaultSettings:
    """The faults of one combination; their seed is the trial's, which the world model is sent too."""
    return FaultSettings(mode=combo.fault_mode, count=config.fault_count, duration=config.fault_duration,
                         seed=config.trial_seed(combo.trial), window=config.fault_window)


class EpisodeRunner:
    """Plays combinations of a run over one transport: the protocol's agent, its turn limit, the usage spent."""

    def __init__(self, config: RunConfig, selection: Selection, transport: EpisodeTransport, store: Store,
                 agent_model: ModelConfig | None) -> None:
        self.config = config
        self.selection = selection
        self.transport = transport
        self.store = store
        # None: the reference-replay agent, under any protocol.
        self.agent_model = agent_model

    def agent(self, combo: Combination) -> Agent:
        task = self.selection.catalog.task(combo.task_id)
        if self.agent_model is None:
            return ReplayAgent(task)
        return self.selection.protocol.agent(self.agent_model, task, self.config)

    async def play(self, combo: Combination, spent: UsageLedger) -> PlayedEpisode:
        """Play one episode to its submission; InfraError when the world model was down or nothing was submitted,
        and the world model's configuration error when its outage came from a setting (a missing key, an
        unknown model).

        The agent's and the world model's usage is added to `spent` as it is known, failures included.
        """
        catalog, config = self.selection.catalog, self.config
        task = catalog.task(combo.task_id)
        scenario = catalog.scenario_of(task)
        agent = self.agent(combo)
        episode_id = uuid.uuid4().hex
        run: AgentRun | None = None
        try:
            async with self.transport.episode(task, fault_settings(config, combo), episode_id) as (client, episode_id):
                run = await agent.run(client, occupation=scenario.occupation, seed=config.trial_seed(combo.trial),
                                      max_turns=self.selection.protocol.max_turns(task, config))
        finally:
            if run is not None:
                spent.add("agent", run.usage)
        record = self.transport.closed_record(episode_id) or await self.store.load_episode(episode_id)
        spent.add("world_model", sum_usage(step.usage for step in record.steps))
        outages = [step for step in record.steps if is_world_model_outage(step)]
        if outages:
            setup = world_model_setup_error(outages[0].error, config.world_model)
            if setup is not None:
                raise setup
            raise InfraError(f"world model outage at step {outages[0].index}: {outages[0].error}")
        if record.status == "open":
            raise InfraError(f"episode {record.id} was never submitted (the agent stopped: {run and run.ended})")
        assert run is not None
        return PlayedEpisode(record, run)
