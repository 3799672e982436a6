"""Judging submitted episodes: the judge hook for a judge model, run off the request path."""

from __future__ import annotations

import asyncio
import logging

from pydantic import BaseModel

from occusim.environments import EpisodeRecord, Scenario, Task

from ._episode import Episode, JudgeHook

log = logging.getLogger("occusim.server")


def judge_hook(model: str | None, *, votes: int = 3) -> JudgeHook | None:
    """A hook that scores a submitted episode with `model`; None (episodes stay unjudged) without a model."""
    if not model:
        return None

    async def hook(task: Task, scenario: Scenario, record: EpisodeRecord) -> BaseModel:
        from occusim.judge import judge

        return await judge(task, record, scenario=scenario, model=model, votes=votes)

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
            log.warning("%d judgment(s) cancelled at shutdown; judge them later with `occusim judge`", len(late))
            await asyncio.gather(*late, return_exceptions=True)
