"""occusim's own protocol as a run drives it: the reference agent, the rubric judge, the planned faults."""

from __future__ import annotations

from collections.abc import Sequence

from occusim.analysis import AuditCoverage, Provenance, RunConfig, RunError
from occusim.environments import Catalog, EpisodeRecord, FaultSettings, Scenario, StepRecord, Task
from occusim.judge import Verdict, judge
from occusim.llm import ModelConfig
from occusim.server import FaultTally, NativeSimulation, fault_tally

from ._agent import Agent, LLMAgent
from ._conversation import AgentRun
from ._run_protocol import OutagePolicy


class NativeProtocol(NativeSimulation):
    """The native protocol: the episodes' side from the server, the run's side here."""

    @classmethod
    def load(cls, sources: list[str]) -> NativeProtocol:
        """The protocol for a run or service over `sources` (it reads nothing from them)."""
        return cls()

    def provenance(self) -> Provenance:
        return Provenance(protocol=self.name)

    def run_tasks(self, config: RunConfig, catalog: Catalog, tasks: list[Task]) -> list[Task]:
        if config.outage_policy == "harness":
            raise RunError("--outage-policy harness scores outages as OccuBench's harness does; it needs "
                           "--protocol occubench")
        return tasks

    def agent(self, model: ModelConfig, task: Task, config: RunConfig) -> Agent:
        return LLMAgent(model, temperature=config.agent_temperature, timeout=config.episode_timeout)

    def max_turns(self, task: Task, config: RunConfig) -> int | None:
        # A few turns beyond the step limit let the agent read the limit's error and submit.
        return config.agent_max_turns or task.max_steps + 5

    async def judge_run(self, task: Task, scenario: Scenario, record: EpisodeRecord, run: AgentRun, *,
                        catalog: Catalog, model: ModelConfig, votes: int, seed: int,
                        outage_policy: OutagePolicy = "infra") -> Verdict:
        return await judge(task, record, scenario=scenario, model=model, votes=votes, seed=seed)

    def outage(self, run: AgentRun | None, verdict: Verdict | None) -> str | None:
        # Every outage is an infra_error here: no scored episode had one.
        return None

    def fault_tally(self, settings: FaultSettings, task: Task, steps: Sequence[StepRecord]) -> FaultTally | None:
        return fault_tally(settings, task, steps)

    def audit_coverage(self, record: EpisodeRecord) -> AuditCoverage | None:
        return "state" if record.mode == "tracked" else "no_state"
