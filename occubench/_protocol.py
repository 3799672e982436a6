"""OccuBench's protocol, replicated: its world model, task message, verifier and agent behind occusim's seam.

Episodes in the `occubench` mode run OccuBench's way; a service speaking this protocol still runs episodes
that ask for a native mode occusim's way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel

from occusim.analysis import Provenance, RunConfig, RunError
from occusim.clients import Agent, AgentRun, OutagePolicy
from occusim.environments import (
    Catalog,
    EpisodeRecord,
    FaultSettings,
    ProtocolName,
    Scenario,
    SimulationMode,
    StepRecord,
    Task,
)
from occusim.judge import Verdict
from occusim.llm import ModelConfig
from occusim.server import (
    NATIVE,
    EpisodeError,
    FaultTally,
    JudgeHook,
    SimulatorError,
    StepOutcome,
    SteppedEpisode,
)

from ._agent import OccubenchAgent
from ._harness import HarnessPrompts, harness_source, load_harness, occubench_config
from ._verifier import (
    OUTAGE_VOTE,
    occubench_action,
    trajectory_from_messages,
    trajectory_from_record,
    verify_occubench,
)
from ._world import occubench_messages, occubench_system_prompt, simulate_occubench

MODE: SimulationMode = "occubench"


class OccubenchProtocol:
    """OccuBench's harness, read from the user's checkout, as occusim's protocol `occubench`."""

    name: ProtocolName = "occubench"

    def __init__(self, harness: HarnessPrompts) -> None:
        self.harness = harness

    @classmethod
    def load(cls, sources: list[str]) -> OccubenchProtocol:
        """The protocol with the harness beside the first `occubench:` source; HarnessError names what is missing."""
        return cls(load_harness(harness_source(sources)))

    # The episodes' side.

    def episode_mode(self, requested: SimulationMode | None) -> SimulationMode:
        return MODE

    def check_episode(self, task_id: str, scenario: Scenario, mode: SimulationMode) -> None:
        if mode != MODE:
            NATIVE.check_episode(task_id, scenario, mode)
        elif scenario.simulator_prompt is None:
            raise EpisodeError(f"mode {MODE!r} runs OccuBench tasks; {task_id!r} is not one (it has no world-model "
                               "prompt of its own)")

    def brief(self, episode: SteppedEpisode) -> str:
        if episode.record.mode != MODE:
            return NATIVE.brief(episode)
        # OccuBench's own task message; submit_result's description says how to finish.
        return self.harness.agent_user_prompt(episode.task.instruction)

    def advertises_output_schemas(self, episode: SteppedEpisode) -> bool:
        # OccuBench's tools have no output schema: their results are the world model's text, verbatim.
        return episode.record.mode != MODE

    async def step(self, episode: SteppedEpisode, index: int, tool: str, arguments: dict[str, Any] | None,
                   raw_arguments: str | None) -> StepOutcome:
        """OccuBench's step: any tool name and arguments go to its world model, whose text is the observation.

        Faults are in the prompt (the model injects them), and there is no step limit (the agent's turns
        bound the episode), as in OccuBench's harness.
        """
        if episode.record.mode != MODE:
            return await NATIVE.step(episode, index, tool, arguments, raw_arguments)
        arguments = {} if arguments is None else arguments
        action = occubench_action(tool, raw_arguments if raw_arguments is not None else json.dumps(arguments))
        system = occubench_system_prompt(self.harness, episode.scenario, episode.record.faults)
        messages = occubench_messages(self.harness, system, episode.record.steps, action)
        async with episode.holding_spend():
            try:
                async with episode.world_model.bounded(tool):
                    answer = await simulate_occubench(self.harness, episode.world_model.model, messages,
                                                      seed=episode.record.faults.seed)
            except SimulatorError as error:
                step = episode.simulator_failure(index, tool, arguments, error)
            else:
                step = episode.new_step(index, tool, arguments, answer.text, is_error=False)
                step.usage, step.latency_ms = answer.usage, answer.latency_ms
            step.raw_arguments = raw_arguments
            return await episode.commit(step, episode.record.state)

    def judge_hook(self, model: str | None, catalog: Catalog, *, votes: int = 3) -> JudgeHook | None:
        """Episodes in the `occubench` mode get OccuBench's verifier, from the calls the server saw."""
        native = NATIVE.judge_hook(model, catalog, votes=votes)
        if not model or native is None:
            return None
        judge_model = ModelConfig.for_role("judge", model=model)
        harness, origins = self.harness, catalog.origins

        async def hook(task: Task, scenario: Scenario, record: EpisodeRecord) -> BaseModel:
            if record.mode != MODE:
                return await native(task, scenario, record)
            return await verify_occubench(
                harness, task, occubench_config(origins[scenario.id]), trajectory_from_record(harness, record),
                record_id=record.id, model=judge_model, seed=record.faults.seed,
            )

        return hook

    def serve_arguments(self, mode: SimulationMode) -> list[str]:
        return ["--protocol", self.name]

    # The run's side.

    def provenance(self) -> Provenance:
        return Provenance(protocol=self.name, harness_files=self.harness.files)

    def run_tasks(self, config: RunConfig, catalog: Catalog, tasks: list[Task]) -> list[Task]:
        """OccuBench's own tasks: `--tasks all` means every OccuBench task loaded; naming another is refused."""
        if "prompt" in config.faults:
            raise RunError("--protocol occubench has OccuBench's fault modes E0-E3; drop 'prompt' from --faults")

        def is_occubench(task: Task) -> bool:
            scenario = catalog.scenario_of(task)
            return scenario.simulator_prompt is not None and catalog.origins[scenario.id].startswith("occubench:")

        if config.tasks == "all":
            return [task for task in tasks if is_occubench(task)]
        others = [task.id for task in tasks if not is_occubench(task)]
        if others:
            shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
            raise RunError(f"--protocol occubench runs OccuBench tasks only; not from an occubench: source: {shown} "
                           "(narrow --tasks, e.g. --tasks 'occubench/*')")
        return tasks

    def agent(self, model: ModelConfig, task: Task, config: RunConfig) -> Agent:
        return OccubenchAgent(model, self.harness, scenario_name=task.title, instruction=task.instruction,
                              timeout=config.episode_timeout, stop_on_outage=config.outage_policy == "harness")

    def max_turns(self, task: Task, config: RunConfig) -> int | None:
        # The harness's own turn limit applies unless one is set.
        return config.agent_max_turns or None

    async def judge_run(self, task: Task, scenario: Scenario, record: EpisodeRecord, run: AgentRun, *,
                        catalog: Catalog, model: ModelConfig, votes: int, seed: int,
                        outage_policy: OutagePolicy = "infra") -> Verdict:
        """OccuBench's verifier, from the agent's conversation (as its harness logs it); under the harness
        outage policy a vote whose provider stays down counts False, as the harness counts it."""
        return await verify_occubench(
            self.harness, task, occubench_config(catalog.origins[scenario.id]),
            trajectory_from_messages(self.harness, run.messages), record_id=record.id, model=model, seed=seed,
            outages_fail=outage_policy == "harness",
        )

    def outage(self, run: AgentRun | None, verdict: Verdict | None) -> str | None:
        """What failed in an episode scored as OccuBench's harness scores outages; None when nothing did."""
        failed = [vote for item in (verdict.items if verdict else []) for check in item.checks
                  for vote in check.votes if vote.reason == OUTAGE_VOTE]
        reasons = ([run.outage] if run is not None and run.outage else []) + (
            [f"verifier outage: {len(failed)} vote(s) counted as False"] if failed else [])
        return "; ".join(reasons) or None

    def fault_tally(self, settings: FaultSettings, task: Task, steps: Sequence[StepRecord]) -> FaultTally | None:
        # The world model injects the faults from its prompt: the server plans none.
        return None

    def audit_coverage(self, record: EpisodeRecord) -> None:
        return None
