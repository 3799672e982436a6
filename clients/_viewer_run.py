"""A run folder for the viewer: one entry per result row, each episode's steps from the run's store."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy.engine import make_url

from occusim.analysis import ResultRow, RunDir
from occusim.server import Store, normalize_url
from occusim.service import StoreEpisodes
from occusim.viewer import EpisodeDetail, EpisodeEntry


def store_missing(url: str) -> str | None:
    """Why a store URL names no store yet (a SQLite file that does not exist); None when it may be read."""
    parsed = make_url(normalize_url(url))
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    path = Path(parsed.database or "")
    return None if path.is_file() else f"no store at {path}"


class RunEpisodes:
    """A run folder read at each request: results.jsonl for the index, the store for each timeline.

    `store` is the run's store, opened by the caller; None when the run has none (then pages show the rows).
    """

    def __init__(self, run_dir: RunDir, store: Store | None, *, store_note: str | None = None) -> None:
        self.run_dir = run_dir
        self.store = store
        self.store_note = store_note
        self.episodes = StoreEpisodes(store) if store is not None else None
        self.title = str(run_dir.path)
        self.limited = False  # every row of the run is listed

    async def _rows(self) -> list[ResultRow]:
        return await asyncio.to_thread(self.run_dir.latest_rows)

    async def entries(self) -> list[EpisodeEntry]:
        return [_entry(row) for row in await self._rows()]

    async def episode(self, episode_id: str) -> EpisodeDetail | None:
        listed = [row for row in await self._rows() if row.episode_id is not None]
        place = next((number for number, row in enumerate(listed) if row.episode_id == episode_id), None)
        if place is None:
            return None
        row = listed[place]
        stored = await self.episodes.episode(episode_id) if self.episodes is not None else None
        entry = _entry(row)
        if stored is not None:
            entry.flags = sorted(set(entry.flags) | set(stored.entry.flags))
        note = self.store_note if self.store is None else (
            None if stored is not None else f"the run's store holds no episode {episode_id}, so no step is shown"
        )
        return EpisodeDetail(
            entry=entry, record=stored.record if stored is not None else None,
            verdict=row.verdict or (stored.verdict if stored is not None else None),
            usage=dict(row.usage), final_answer=row.final_answer, duration_s=row.duration_s, note=note,
            messages=list(row.messages),
            previous_id=listed[place - 1].episode_id if place > 0 else None,
            next_id=listed[place + 1].episode_id if place + 1 < len(listed) else None,
        )


def _entry(row: ResultRow) -> EpisodeEntry:
    return EpisodeEntry(
        episode_id=row.episode_id, task_id=row.task_id, scenario_id=row.scenario_id, category=row.category,
        fault_mode=row.fault_mode, trial=row.trial, world_model=row.world_model, agent_model=row.agent_model,
        judge_model=row.judge_model, faults_planned=row.faults_planned, faults_met=row.faults_met, status=row.status,
        passed=row.passed, score=row.score, steps=row.steps, faults=list(row.faults_injected), error=row.error,
        flags=_flag_kinds(row), created_at=row.finished_at,
    )


def _flag_kinds(row: ResultRow) -> list[str]:
    """The kinds of the simulator audit's flags on the row's steps, for rows that record them."""
    steps = getattr(row, "flagged_steps", None) or []
    return sorted({str(flag.kind) for step in steps for flag in getattr(step, "flags", [])})
