"""A store's episodes for the viewer: every episode (`occusim view --db`) or one tenant's (the hosted pages)."""

from __future__ import annotations

from pydantic import ValidationError

from occusim.environments import Catalog, EpisodeRecord, StepRecord
from occusim.judge import Verdict
from occusim.viewer import EpisodeDetail, EpisodeEntry, step_flags

from ._episodes import EPISODE_ID
from ._errors import EpisodeNotFoundError
from ._store import Store
from ._store_records import EpisodeSummary, Judgment

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
        # A closed episode's steps do not change: its record is read once for the index's flags.
        self._closed: dict[str, EpisodeRecord] = {}

    async def entries(self) -> list[EpisodeEntry]:
        summaries = await self.store.list_episodes(tenant=self.tenant if self.scoped else None, limit=self.limit)
        self.limited = len(summaries) >= self.limit
        judgments = await self.store.latest_judgments([summary.id for summary in summaries])
        entries = []
        for summary in summaries:
            entry = self._entry(summary, judgments.get(summary.id))
            if "flags" in StepRecord.model_fields:  # the simulator audit's flags, where records carry them
                record = await self._record(summary.id)
                if record is not None:
                    entry.flags = sorted({flag["kind"] for step in record.steps for flag in step_flags(step)})
                    entry.faults = [step.fault.label for step in record.steps if step.fault is not None]
            entries.append(entry)
        return entries

    async def episode(self, episode_id: str) -> EpisodeDetail | None:
        record = await self._record(episode_id, cached=False)
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
        return EpisodeDetail(entry=entry, record=record, verdict=verdict, note=note)

    async def _record(self, episode_id: str, *, cached: bool = True) -> EpisodeRecord | None:
        if not EPISODE_ID.fullmatch(episode_id):
            return None  # no episode has such an id, and the store need not be asked (it may hold a NUL)
        if cached and episode_id in self._closed:
            return self._closed[episode_id]
        try:
            record = await self.store.load_episode(episode_id)
        except EpisodeNotFoundError:
            return None
        if self.scoped and record.tenant != self.tenant:
            return None  # another tenant's episode is answered like a missing one
        if record.status != "open":  # its steps no longer change
            self._closed[episode_id] = record
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

