"""A store's episodes for the viewer: every episode (`occusim view --db`) or one tenant's (the hosted pages)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from occusim.environments import Catalog, EpisodeRecord
from occusim.judge import Verdict
from occusim.server import EPISODE_ID, EpisodeNotFoundError, EpisodeSummary, Judgment, Store, fault_tally
from occusim.viewer import EpisodeDetail, EpisodeEntry, step_flags

# The index lists the newest episodes of a store up to this many.
INDEX_LIMIT = 1000


class StoreEpisodes:
    """Episodes read from a store at each request. With `scoped`, only `tenant`'s episodes exist here."""

    def __init__(self, store: Store, *, catalog: Catalog | None = None, tenant: str | None = None,
                 scoped: bool = False, title: str | None = None, limit: int = INDEX_LIMIT) -> None:
        self.store = store
        self.catalog = catalog
        self.tenant = tenant
        self.scoped = scoped
        self.title = title or (f"episodes of {tenant}" if scoped and tenant else repr(store))
        self.limit = limit
        self.limited = False

    async def entries(self) -> list[EpisodeEntry]:
        summaries = await self.store.list_episodes(tenant=self.tenant if self.scoped else None, limit=self.limit)
        self.limited = len(summaries) >= self.limit
        judgments = await self.store.latest_judgments([summary.id for summary in summaries])
        # The faults met and the audit's flags are on the steps: those two fields of every step, in one query.
        marks = await self.store.step_fields([summary.id for summary in summaries], ["fault", "flags"])
        entries = []
        for summary in summaries:
            entry = self._entry(summary, judgments.get(summary.id))
            entry.faults, entry.flags = _faults_and_flags(marks.get(summary.id, []))
            entries.append(entry)
        return entries

    async def episode(self, episode_id: str) -> EpisodeDetail | None:
        record = await self._record(episode_id)
        if record is None:
            return None
        judgment = (await self.store.latest_judgments([episode_id])).get(episode_id)
        verdict, note = None, None
        if judgment is not None:
            try:
                verdict = Verdict.model_validate(judgment.verdict)
            except ValidationError as error:
                note = f"the stored verdict is not in this release's format: {error.error_count()} problem(s)"
        entry = self._entry(record, judgment)
        entry.faults = [step.fault.label for step in record.steps if step.fault is not None]
        entry.flags = sorted({flag["kind"] for step in record.steps for flag in step_flags(step)})
        task = self.catalog.tasks.get(record.task_id) if self.catalog is not None else None
        if task is not None:
            # The plan depends on the task's expected length; without the task only the faulted calls show.
            tally = fault_tally(record.faults, task, record.steps)
            entry.faults_planned, entry.faults_met = tally.planned, tally.met
        return EpisodeDetail(entry=entry, record=record, verdict=verdict, note=note,
                             instruction=task.instruction if task is not None else None)

    async def _record(self, episode_id: str) -> EpisodeRecord | None:
        if not EPISODE_ID.fullmatch(episode_id):
            return None  # no episode has such an id, and the store need not be asked (it may hold a NUL)
        try:
            record = await self.store.load_episode(episode_id)
        except EpisodeNotFoundError:
            return None
        if self.scoped and record.tenant != self.tenant:
            return None  # another tenant's episode is answered like a missing one
        return record

    def _entry(self, episode: EpisodeSummary | EpisodeRecord, judgment: Judgment | None) -> EpisodeEntry:
        scenario = self.catalog.scenarios.get(episode.scenario_id) if self.catalog is not None else None
        steps = episode.step_count if isinstance(episode, EpisodeSummary) else len(episode.steps)
        return EpisodeEntry(
            episode_id=episode.id, task_id=episode.task_id, scenario_id=episode.scenario_id,
            category=scenario.category if scenario is not None else "", fault_mode=episode.faults.mode,
            world_model=episode.world_model, status=episode.status, steps=steps,
            passed=judgment.passed if judgment is not None else None,
            score=judgment.score if judgment is not None else None, created_at=episode.created_at,
        )



def _faults_and_flags(steps: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The labels of the faults the agent met, and the kinds of the audit's flags, from steps' stored fields."""
    faults = [str(step["fault"].get("label", "")) for step in steps if isinstance(step.get("fault"), dict)]
    kinds = {str(flag.get("kind")) for step in steps for flag in step.get("flags") or [] if isinstance(flag, dict)}
    return faults, sorted(kinds)
