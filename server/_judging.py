"""Judging submitted episodes: the judge hook for a judge model, run off the request path."""

from __future__ import annotations

import asyncio
import logging

from ._episode import Episode
from ._episodes import EpisodeService
from ._errors import EpisodeError

_PAGE = 500

log = logging.getLogger("occusim.server")


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
