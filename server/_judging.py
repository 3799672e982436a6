"""Judging submitted episodes: the judge hook for a judge model, run off the request path."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from pydantic import BaseModel

from occusim.environments import EpisodeRecord, HarnessPrompts, Scenario, Task

from ._episode import Episode, JudgeHook
from ._episodes import EpisodeService
from ._errors import EpisodeError

_PAGE = 500

log = logging.getLogger("occusim.server")


def judge_hook(model: str | None, *, votes: int = 3) -> JudgeHook | None:
    """A hook that scores a submitted episode with `model`; None (episodes stay unjudged) without a model."""
    if not model:
        return None

    async def hook(task: Task, scenario: Scenario, record: EpisodeRecord) -> BaseModel:
        from occusim.judge import judge

        return await judge(task, record, scenario=scenario, model=model, votes=votes)

    return hook


def occubench_judge_hook(model: str | None, harness: HarnessPrompts, origins: Mapping[str, str], *,
                         votes: int = 3) -> JudgeHook | None:
    """Like `judge_hook`, but `occubench` episodes get OccuBench's verifier, from the calls the server saw.

    `origins` maps scenario ids to catalog origins, where each environment's config is read again.
    """
    if not model:
        return None
    native = judge_hook(model, votes=votes)
    assert native is not None

    async def hook(task: Task, scenario: Scenario, record: EpisodeRecord) -> BaseModel:
        if record.mode != "occubench":
            return await native(task, scenario, record)
        from occusim.environments import occubench_config
        from occusim.judge import trajectory_from_record, verify_occubench
        from occusim.llm import ModelConfig

        return await verify_occubench(
            harness, task, occubench_config(origins[scenario.id]), trajectory_from_record(harness, record),
            record_id=record.id, model=ModelConfig.for_role("judge", model=model), seed=record.faults.seed,
        )

    return hook


class BackgroundJudging:
    """Judges episodes in background tasks, so `submit_result` answers at once; shutdown drains them."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[object]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def start(self, episode: Episode) -> None:
        if episode.judge_hook is None:
            return
        task = asyncio.get_running_loop().create_task(episode.judge(), name=f"judge-{episode.id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def resume(self, service: EpisodeService) -> list[str]:
        """Judge again every episode left `submitted` without a verdict (its process was killed while judging
        it, or its judgment was cancelled at shutdown); returns their ids. Nothing to do without a judge."""
        if service.judge is None:
            return []
        pending: list[str] = []
        while True:
            page = await service.store.list_episodes(status="submitted", limit=_PAGE, offset=len(pending))
            pending.extend(summary.id for summary in page)
            if len(page) < _PAGE:
                break
        resumed = []
        for episode_id in pending:
            try:
                episode = await service.open(episode_id)
            except EpisodeError as error:  # e.g. its task is not in this process's catalog
                log.warning("episode %s awaits judging but cannot be judged here: %s", episode_id, error)
                continue
            self.start(episode)
            resumed.append(episode_id)
        if resumed:
            log.info("judging %d episode(s) left submitted without a verdict", len(resumed))
        return resumed

    async def drain(self, grace_seconds: float | None = None) -> None:
        """Wait for running judgments; after `grace_seconds` the rest are cancelled (status stays submitted)."""
        if not self._tasks:
            return
        pending = list(self._tasks)
        log.info("waiting for %d judgment(s) to finish", len(pending))
        _, late = await asyncio.wait(pending, timeout=grace_seconds)
        for task in late:
            task.cancel()
        if late:
            log.warning("%d judgment(s) cancelled at shutdown; they resume when the service starts", len(late))
            await asyncio.gather(*late, return_exceptions=True)
