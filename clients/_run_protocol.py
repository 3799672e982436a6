"""What a batch run asks of its protocol beyond the episodes: the tasks it runs, the agent, the judge, the row."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol, runtime_checkable

from occusim.analysis import AuditCoverage, Provenance, RunConfig
from occusim.environments import Catalog, EpisodeRecord, FaultSettings, Scenario, StepRecord, Task
from occusim.judge import Verdict
from occusim.llm import ModelConfig
from occusim.server import FaultTally, SimulationProtocol

from ._agent import Agent
from ._conversation import AgentRun

# How a run treats a provider that stays down: an infra_error (retried, never scored), or as the protocol's
# own harness scores it.
OutagePolicy = Literal["infra", "harness"]


@runtime_checkable
class RunProtocol(SimulationProtocol, Protocol):
    """A protocol as `occusim run` drives it; `load_protocol` gives the one a run names."""

    def provenance(self) -> Provenance:
        """The protocol's part of a run's provenance (its name, and any harness files it read)."""
        ...

    def run_tasks(self, config: RunConfig, catalog: Catalog, tasks: list[Task]) -> list[Task]:
        """The selected tasks this protocol runs; RunError for a selection or fault mode it cannot run."""
        ...

    def agent(self, model: ModelConfig, task: Task, config: RunConfig) -> Agent:
        """The agent that plays one episode of `task` with `model`."""
        ...

    def max_turns(self, task: Task, config: RunConfig) -> int | None:
        """The agent's turn limit for `task` (None: the agent's own)."""
        ...

    async def judge_run(self, task: Task, scenario: Scenario, record: EpisodeRecord, run: AgentRun, *,
                        catalog: Catalog, model: ModelConfig, votes: int, seed: int,
                        outage_policy: OutagePolicy = "infra") -> Verdict:
        """Score one finished episode, from its record or from the agent's conversation."""
        ...

    def outage(self, run: AgentRun | None, verdict: Verdict | None) -> str | None:
        """What provider failed in an episode scored despite it (--outage-policy harness); None when nothing did."""
        ...

    def fault_tally(self, settings: FaultSettings, task: Task, steps: Sequence[StepRecord]) -> FaultTally | None:
        """The faults the server planned for the episode and met; None where it plans none."""
        ...

    def audit_coverage(self, record: EpisodeRecord) -> AuditCoverage | None:
        """What the per-step audit could check in this episode; None where it ran no audit."""
        ...
