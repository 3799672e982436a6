"""Shared counters: an expiry renewed by every change, and counts that never go below 0 (in memory and Redis)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio

from occusim.service import MemoryCounters, RedisCounters
from occusim.service._counters import counters_for
from tests.helpers import REDIS_URL, hosted_settings

KINDS = ["memory", pytest.param("redis", marks=pytest.mark.redis)]


def _counters(kind: str) -> MemoryCounters | RedisCounters:
    return MemoryCounters() if kind == "memory" else RedisCounters(REDIS_URL, prefix=f"test-{uuid.uuid4().hex}")


@pytest.mark.parametrize("kind", KINDS)
async def test_a_count_in_use_outlives_its_first_expiry(kind):
    counters = _counters(kind)
    try:
        await counters.add("opening:alice", 1, ttl=2)
        await asyncio.sleep(1.2)
        await counters.add("opening:alice", 1, ttl=2)
        await asyncio.sleep(1.2)
        assert await counters.value("opening:alice") == 2, "the second change renewed the expiry"
        await asyncio.sleep(1.2)
        assert await counters.value("opening:alice") == 0, "left alone, it lapses"
    finally:
        await counters.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_a_release_after_expiry_cannot_drive_a_count_negative(kind):
    counters = _counters(kind)
    try:
        for _ in range(3):
            await counters.add("opening:alice", 1, ttl=1)
        await asyncio.sleep(1.3)
        for _ in range(3):
            assert await counters.add("opening:alice", -1, ttl=1) == 0
        # Had the count gone to -3, three more places would have been free.
        assert await counters.add("opening:alice", 1, ttl=60) == 1
        assert await counters.add("spend", 0.25, ttl=60) == 0.25
        assert await counters.add("spend", -1.0, ttl=60) == 0
        assert await counters.value("spend") == 0
    finally:
        await counters.close()


@pytest.mark.parametrize("kind", KINDS)
async def test_more_concurrent_changes_than_connections_wait_for_one_and_all_count(kind):
    # A replica under load changes counters for every call at once: far more changes in flight than the
    # client keeps connections. They queue for a connection; none fails for want of one.
    counters = _counters(kind)
    try:
        await asyncio.gather(*(counters.add("calls:alice", 1, ttl=60) for _ in range(1000)))
        assert await counters.value("calls:alice") == 1000
    finally:
        await counters.close()


@pytest.mark.redis
async def test_the_connections_setting_bounds_what_a_process_holds_in_redis(tmp_path):
    prefix = f"test-{uuid.uuid4().hex}"
    settings = hosted_settings(tmp_path, redis=REDIS_URL, redis_prefix=prefix, redis_connections=3)
    counters = counters_for(settings.redis, prefix=settings.redis_prefix, connections=settings.redis_connections)
    observer = redis.asyncio.Redis.from_url(REDIS_URL)
    seen: list[int] = []

    async def watch() -> None:
        while True:
            clients = await observer.client_list()
            seen.append(sum(1 for client in clients if client.get("name") == f"occusim:{prefix}"))
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    try:
        await asyncio.gather(*(counters.add("calls:alice", 1, ttl=60) for _ in range(2000)))
        assert await counters.value("calls:alice") == 2000
    finally:
        watcher.cancel()
        await counters.close()
        await observer.aclose()
    assert max(seen) == 3, seen  # named as its deployment, and never more than the setting allows
