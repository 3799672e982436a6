"""Counters and flags that replicas share: in Redis with `--redis URL`, else in this process's memory.

Each key expires after the time it was last given, so windows (a minute, a day) and the places of a
replica that died clean up after themselves; no count ever goes below 0.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from occusim.environments import OccusimError

SOCKET_SECONDS = 30.0
# Connections one process keeps to Redis by default (`redis_connections`); each command holds one for well
# under a millisecond.
CONNECTIONS = 64
# One atomic step in Redis: add, floor at 0, and renew the expiry.
_ADD = """
local total = redis.call('INCRBYFLOAT', KEYS[1], ARGV[1])
if tonumber(total) < 0 then
  total = '0'
  redis.call('SET', KEYS[1], total)
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return total
"""


class CountersUnavailableError(OccusimError):
    """Redis could not be reached or answered with an error; the message says which and why."""


class Counters(Protocol):
    async def add(self, key: str, amount: float, *, ttl: float) -> float:
        """Add `amount` to `key` (0 when absent or expired) and return the new total, never below 0.

        The key lives `ttl` seconds from this change: a count in use never lapses under its holders, so a
        decrement can never meet a count that expired and restarted from 0.
        """
        ...

    async def value(self, key: str) -> float:
        """The total of `key`, 0 when absent or expired."""
        ...

    async def flag(self, key: str, *, ttl: float) -> None:
        """Set a flag that reads as set for `ttl` seconds."""
        ...

    async def flagged(self, key: str) -> bool: ...

    async def ping(self) -> None:
        """Raise CountersUnavailableError when the counters cannot be reached."""
        ...

    async def close(self) -> None: ...


class MemoryCounters:
    """Counters of one process: what a single replica without Redis uses."""

    def __init__(self) -> None:
        self._values: dict[str, tuple[float, float]] = {}

    def _live(self, key: str) -> float:
        entry = self._values.get(key)
        if entry is None:
            return 0.0
        value, expires = entry
        if expires <= time.monotonic():
            del self._values[key]
            return 0.0
        return value

    async def add(self, key: str, amount: float, *, ttl: float) -> float:
        total = max(0.0, self._live(key) + amount)
        self._values[key] = (total, time.monotonic() + ttl)
        if len(self._values) > 10_000:
            self._sweep()
        return total

    async def value(self, key: str) -> float:
        return self._live(key)

    async def flag(self, key: str, *, ttl: float) -> None:
        self._values[key] = (1.0, time.monotonic() + ttl)

    async def flagged(self, key: str) -> bool:
        return self._live(key) > 0

    async def ping(self) -> None:
        return None

    async def close(self) -> None:
        self._values.clear()

    def _sweep(self) -> None:
        now = time.monotonic()
        for key in [key for key, (_, expires) in self._values.items() if expires <= now]:
            del self._values[key]


class RedisCounters:
    """Counters in Redis, shared by every replica given the same URL and prefix (redis.asyncio, imported lazily)."""

    def __init__(self, url: str, *, prefix: str = "occusim", connections: int = CONNECTIONS) -> None:
        import redis.asyncio
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff
        from redis.exceptions import ConnectionError, TimeoutError

        self.url = url
        self.prefix = prefix
        self.connections = connections
        try:
            # A saturated replica's event loop can run late by seconds: time out generously, and retry what
            # a dropped connection or a timeout interrupted.
            # Past its connections, redis-py's default pool fails a command ("Too many connections"); this
            # one makes it wait for a free connection, as long as a command may take.
            pool = redis.asyncio.BlockingConnectionPool.from_url(
                url, max_connections=connections, timeout=SOCKET_SECONDS,
                # Named, so that Redis's CLIENT LIST shows which deployment holds which connections.
                client_name=f"occusim:{prefix}",
                socket_timeout=SOCKET_SECONDS, socket_connect_timeout=SOCKET_SECONDS,
                retry=Retry(ExponentialBackoff(cap=1.0, base=0.05), retries=3),
                retry_on_error=[ConnectionError, TimeoutError], health_check_interval=30,
            )
            self._redis: Any = redis.asyncio.Redis.from_pool(pool)  # closing the client closes the pool
        except ValueError as error:
            raise CountersUnavailableError(f"--redis {_shown(url)}: {error}") from None
        self._add = self._redis.register_script(_ADD)

    def _key(self, key: str) -> str:
        return f"{self.prefix}:{key}"

    async def add(self, key: str, amount: float, *, ttl: float) -> float:
        async with self._answers():
            total = await self._add(keys=[self._key(key)], args=[repr(float(amount)), max(1, round(ttl))])
        return float(total)

    async def value(self, key: str) -> float:
        async with self._answers():
            found = await self._redis.get(self._key(key))
        return float(found) if found is not None else 0.0

    async def flag(self, key: str, *, ttl: float) -> None:
        async with self._answers():
            await self._redis.set(self._key(key), 1, ex=max(1, round(ttl)))

    async def flagged(self, key: str) -> bool:
        async with self._answers():
            return bool(await self._redis.exists(self._key(key)))

    async def ping(self) -> None:
        async with self._answers():
            await self._redis.ping()

    async def close(self) -> None:
        await self._redis.aclose()

    @contextlib.asynccontextmanager
    async def _answers(self) -> AsyncIterator[None]:
        from redis.exceptions import RedisError

        try:
            yield
        except (RedisError, OSError) as error:
            raise CountersUnavailableError(f"Redis at {_shown(self.url)}: {error}") from None


def counters_for(url: str | None, *, prefix: str = "occusim",
                 connections: int = CONNECTIONS) -> MemoryCounters | RedisCounters:
    return RedisCounters(url, prefix=prefix, connections=connections) if url else MemoryCounters()


def _shown(url: str) -> str:
    """A Redis URL fit for a message: without its password."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.split(":", 1)[0]
    return f"{scheme}://{user + ':***' if ':' in credentials else user}@{host}"
