"""occusim episodes behind OpenEnv's reset/step/state: one `EpisodeEnv` per WebSocket session, each playing
one episode at a time of the catalog held in memory (a reset reloads nothing)."""

from __future__ import annotations

from dataclasses import dataclass, field

import mcp_types as types

from occusim.environments import FaultMode, FaultSettings, OccusimError, Scenario, SimulationMode
from occusim.server import (
    SUBMIT_TOOL,
    Episode,
    EpisodeService,
    call_episode_tool,
    scenario_tools,
    task_brief,
)

from ._openenv_wire import (
    Action,
    CallToolAction,
    CallToolObservation,
    EpisodeState,
    ListToolsObservation,
    Observation,
    ResetObservation,
    ResetRequest,
    ToolSpec,
    Verdict,
)


class NoEpisodeError(OccusimError):
    """A step or a tool listing before any reset: there is no episode to act on."""

    def __init__(self) -> None:
        super().__init__("no episode is open in this session: send a reset first (it opens one)")


@dataclass(frozen=True)
class EpisodeDefaults:
    """What a reset that names nothing gets: the first task served, the server's fault mode, seed and mode."""

    task_id: str
    faults: FaultMode = "E0"
    seed: int = 0
    mode: SimulationMode = "tracked"
    fault_options: dict[str, int] = field(default_factory=dict)  # count, duration, window


class EpisodeEnv:
    """One OpenEnv environment: `reset` opens an episode (ending none: the previous one stays as it is in the
    store), `step` runs a list_tools or call_tool action on it, `state` describes it.

    Submitting (`submit_result`) judges the episode before answering: the observation is `done`, its reward
    the verdict's score, and its metadata the verdict. Without a judge, or when the judge reaches no verdict,
    the reward is None and the metadata says why; it is never a silent 0.
    """

    def __init__(self, service: EpisodeService, defaults: EpisodeDefaults) -> None:
        self.service = service
        self.defaults = defaults
        self.episode: Episode | None = None
        self.reward: float | None = None

    async def reset(self, request: ResetRequest, *, open_episode: bool = True) -> ResetObservation:
        """Open an episode of the request's task (the default task when it names none); raises
        UnknownTaskError and EpisodeError. Without `open_episode`, only say what the episode would be."""
        task_id = request.task_id or self.defaults.task_id
        task = self.service.catalog.task(task_id)
        faults = FaultSettings(
            mode=request.faults or self.defaults.faults,
            seed=self.defaults.seed if request.seed is None else request.seed,
            **self.defaults.fault_options,
        )
        if not open_episode:
            return ResetObservation(
                episode_id=None,
                task_id=task.id,
                prompt=task.instruction,
                tools=_specs(self.service.catalog.scenario_of(task)),
            )
        episode = await self.service.create(
            task.id, faults=faults, mode=self.defaults.mode, episode_id=request.episode_id
        )
        self.leave()
        self.episode, self.reward = episode, None
        return ResetObservation(
            episode_id=episode.id, task_id=task.id, prompt=task_brief(episode), tools=_specs(episode.scenario)
        )

    async def step(self, action: Action) -> Observation:
        """Run `action`; raises NoEpisodeError for a tool call before any reset (listing the tools needs none:
        before a reset it lists the default task's)."""
        if not isinstance(action, CallToolAction):
            if self.episode is None:
                return ListToolsObservation(
                    tools=_specs(self.service.catalog.scenario_of(self.defaults.task_id))
                )
            return ListToolsObservation(
                tools=_specs(self.episode.scenario), done=self.episode.closed, reward=self.reward
            )
        episode = self._open()
        result = await call_episode_tool(episode, action.tool_name, action.arguments)
        text = "".join(part.text for part in result.content if isinstance(part, types.TextContent))
        observation = CallToolObservation(
            tool_name=action.tool_name,
            result=text,
            is_error=result.is_error,
            done=episode.closed,
            reward=self.reward,
        )
        if action.tool_name == SUBMIT_TOOL and not result.is_error:
            verdict = self._verdict(episode)
            self.reward = verdict.score if verdict.unjudged is None else None
            observation.reward = self.reward
            observation.metadata = {"verdict": verdict.model_dump(mode="json")}
        return observation

    def leave(self) -> None:
        """Stop holding the episode: one left unsubmitted stays in the store as it is (open, until the store
        expires it), but not in memory, so that a long training run's abandoned rollouts do not pile up."""
        if self.episode is not None and not self.episode.closed:
            self.service.forget(self.episode.id)

    def state(self) -> EpisodeState:
        episode = self.episode
        if episode is None:
            return EpisodeState()
        faults = episode.record.faults
        return EpisodeState(
            episode_id=episode.id,
            step_count=len(episode.record.steps),
            task_id=episode.task.id,
            faults=faults.mode,
            seed=faults.seed,
            status=episode.status,
            reward=self.reward,
        )

    def _open(self) -> Episode:
        if self.episode is None:
            raise NoEpisodeError()
        return self.episode

    def _verdict(self, episode: Episode) -> Verdict:
        verdict = episode.verdict
        base = Verdict(episode_id=episode.id, status=episode.status)
        if episode.judge_hook is None:
            base.unjudged = "the server has no judge model (start it with --judge-model)"
            return base
        if verdict is None:
            base.unjudged = f"judging failed: {episode.judge_error}"
            return base
        base.score = getattr(verdict, "score", None)
        base.passed = getattr(verdict, "passed", None)
        if getattr(verdict, "unjudged", False):
            base.unjudged = "the judge could not decide a check that could change the outcome"
        return base


def _specs(scenario: Scenario) -> list[ToolSpec]:
    """The episode's tools as OpenEnv lists them (name, description, input schema)."""
    return [
        ToolSpec(name=tool.name, description=tool.description or "", input_schema=dict(tool.input_schema))
        for tool in scenario_tools(scenario, output_schemas=False)
    ]
