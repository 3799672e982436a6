"""Scoring a played episode and writing a batch's rows: the protocol's judge, the verdict stored, the row built."""

from __future__ import annotations

from typing import Any

from occusim.analysis import Combination, ResultRow, RowStatus, RunConfig, StepFlags
from occusim.environments import EpisodeRecord, Usage
from occusim.judge import Verdict
from occusim.llm import ModelConfig, UsageLedger
from occusim.server import Store

from ._batch_plan import Selection
from ._conversation import AgentRun
from ._episode_runner import PlayedEpisode, fault_settings, is_simulator_error


class Scorer:
    """Judges played episodes with the run's protocol, stores each verdict beside its episode, and builds rows."""

    def __init__(self, config: RunConfig, selection: Selection, store: Store | None) -> None:
        self.config = config
        self.selection = selection
        self.store = store
        self.model = ModelConfig.for_role("judge", model=config.judge_model)

    async def score(self, combo: Combination, played: PlayedEpisode, spent: UsageLedger) -> Verdict:
        """The episode's verdict, stored in the run's store; its usage added to `spent`."""
        assert self.store is not None
        catalog, config = self.selection.catalog, self.config
        task = catalog.task(combo.task_id)
        verdict = await self.selection.protocol.judge_run(
            task, catalog.scenario_of(task), played.record, played.run, catalog=catalog, model=self.model,
            votes=config.judge_votes, seed=config.trial_seed(combo.trial), outage_policy=config.outage_policy,
        )
        spent.add("judge", verdict.usage)
        await self.store.save_judgment(played.record.id, verdict)
        return verdict

    def row(self, combo: Combination, *, status: RowStatus, attempts: int, usage: dict[str, Usage], duration: float,
            error: str | None = None, record: EpisodeRecord | None = None, run: AgentRun | None = None,
            verdict: Verdict | None = None, configuration_error: str | None = None) -> ResultRow:
        config, protocol = self.config, self.selection.protocol
        task = self.selection.catalog.task(combo.task_id)
        scenario = self.selection.catalog.scenario_of(task)
        steps = record.steps if record is not None else []
        scored = verdict if verdict is not None and not verdict.unjudged else None
        faults = protocol.fault_tally(fault_settings(config, combo), task, steps)
        return ResultRow(
            task_id=task.id, scenario_id=scenario.id, category=scenario.category, difficulty=task.difficulty,
            fault_mode=combo.fault_mode, fault_count=config.fault_count, fault_duration=config.fault_duration,
            trial=combo.trial, seed=config.trial_seed(combo.trial), agent_model=config.agent_model,
            world_model=config.world_model, judge_model=config.judge_model, transport=config.transport,
            status=status, error=error, configuration_error=configuration_error, attempts=attempts,
            episode_id=record.id if record else None,
            score=scored.score if scored else None, passed=bool(scored.passed) if scored else None,
            verdict=verdict, **_judge_counts(verdict),
            usage={role: usage.get(role, Usage()) for role in ("agent", "world_model", "judge")},
            steps=len(steps), simulator_errors=sum(1 for step in steps if is_simulator_error(step)),
            faults_injected=[step.fault.label for step in steps if step.fault is not None],
            audited=protocol.audit_coverage(record) if record is not None else None,
            flagged_steps=[StepFlags(step=step.index, tool=step.tool, flags=step.flags) for step in steps if step.flags],
            faults_planned=faults.planned if faults else 0, faults_met=faults.met if faults else 0,
            too_short_for_faults=record is not None and faults is not None and faults.too_short,
            outage=protocol.outage(run, verdict),
            faults_not_applicable=record is not None and faults is not None and faults.not_applicable,
            fault_window=faults.window if faults else None,
            agent_ended=run.ended if run else None, final_answer=run.final_answer if run else None,
            messages=run.messages if run else [], tools=run.tools if run else [], duration_s=round(duration, 3),
        )


def _judge_counts(verdict: Verdict | None) -> dict[str, Any]:
    """The judge's abstentions, ties, re-asks and undecided checks, as row fields the report can add up."""
    if verdict is None:
        return {}
    voted = [check for item in verdict.items if item.kind == "llm" for check in item.checks if check.votes]
    return {"judge_checks": len(voted), "judge_check_votes": sum(len(check.votes) for check in voted),
            "judge_abstentions": verdict.abstentions, "judge_ties": len(verdict.ties),
            "judge_reasks": verdict.reasks, "unjudged_checks": verdict.unjudged_checks}
