"""Bounded concurrency per event loop: when the service is saturated, callers wait their turn instead of
failing after the work they asked for was paid."""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator


class LoopSemaphore:
    """At most `size` holders at once on each event loop (asyncio primitives belong to one loop, and a
    store or service may be used from several, e.g. a test's loop and a server thread's)."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"a concurrency limit must be at least 1, got {size}")
        self.size = size
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.size)
        async with semaphore:
            yield
