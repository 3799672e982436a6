"""Replicas behind nginx: tool-call latency and throughput of one replica reached directly against two replicas
behind nginx (round robin, no stickiness), all on one PostgreSQL database and one Redis, with per-tenant limits
set so every call is counted; and the cost of counting in Redis against counting in memory.

Needs PostgreSQL (OCCUSIM_TEST_POSTGRES_URL), Redis (OCCUSIM_TEST_REDIS_URL) and nginx. SESSIONS concurrent
sessions (half of them handshake-era), CALLS tool calls each; set BENCH_SESSIONS / BENCH_CALLS to change them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import _checkout  # noqa: F401
import httpx
import yaml
from _served import bench_scenario, percentile

from occusim.server import Store
from tests.helpers import (
    API_KEYS,
    LEGACY,
    MODERN,
    POSTGRES_URL,
    REDIS_URL,
    TOKEN_SECRET,
    NginxProxy,
    drop_schema,
    free_port,
    mcp_session,
    open_episode,
    start_service,
    wait_healthy,
)

SESSIONS = int(os.environ.get("BENCH_SESSIONS", "100"))
CALLS = int(os.environ.get("BENCH_CALLS", "4"))
LIMITS = {"open_episodes": 100_000, "tool_calls_per_minute": 1_000_000, "cost_per_day_usd": 1000.0}


@contextlib.asynccontextmanager
async def replicas(folder: Path, count: int, *, redis: bool, schema: str) -> AsyncIterator[list[str]]:
    config = folder / f"service-{count}-{redis}.yaml"
    config.write_text(yaml.safe_dump({
        "db": POSTGRES_URL, "db_schema": schema, "api_keys": API_KEYS, "token_secret": TOKEN_SECRET,
        "world_model": "scripted/triage", "expire_every_seconds": 3600, "limits": LIMITS,
        **({"redis": REDIS_URL, "redis_prefix": f"bench-{uuid.uuid4().hex}"} if redis else {}),
    }))
    source = folder / "triage.yaml"
    source.write_text(yaml.safe_dump(bench_scenario(max_steps=50)))
    ports = [free_port() for _ in range(count)]
    processes = [start_service(folder, config, source, port, folder / f"replica-{port}.log") for port in ports]
    bases = [f"http://127.0.0.1:{port}" for port in ports]
    try:
        await wait_healthy(bases, processes, within=120)
        yield bases
    finally:
        for process in processes:
            process.terminate()
            process.wait(timeout=60)


async def session(http: httpx.AsyncClient, base: str, mode: str, latencies: list[float], calls: int) -> None:
    body = await open_episode(http, base)
    async with mcp_session(body["mcp_url"], body["token"], mode, read_timeout=600) as client:
        for _ in range(calls):
            began = time.perf_counter()
            result = await client.call_tool("get_patient", {"patient_id": "P2"})
            latencies.append(time.perf_counter() - began)
            assert not result.is_error, result
        await client.call_tool("submit_result", {"answer": "done"})


async def drive(base: str, sessions: int, calls: int = CALLS) -> tuple[list[float], float]:
    latencies: list[float] = []
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=600, limits=limits) as http:
        began = time.perf_counter()
        await asyncio.gather(*(session(http, base, LEGACY if n % 2 else MODERN, latencies, calls)
                               for n in range(sessions)))
    return latencies, time.perf_counter() - began


async def measure(name: str, base: str) -> tuple[float, float, float]:
    """A warm-up session (litellm's import, first connections), one session alone, then SESSIONS at once:
    (p50 alone, p50 under load, calls/s under load)."""
    await drive(base, 1, 2)
    alone, _ = await drive(base, 1, 20)
    loaded, seconds = await drive(base, SESSIONS)
    p50_alone = percentile(alone, 0.5) * 1000
    p50, p95 = percentile(loaded, 0.5) * 1000, percentile(loaded, 0.95) * 1000
    rate = len(loaded) / seconds
    print(f"  {name:<32} alone p50 {p50_alone:6.1f} ms | {SESSIONS} sessions: p50 {p50:7.1f} ms, "
          f"p95 {p95:7.1f} ms, {rate:5.1f} calls/s")
    return p50_alone, p50, rate


async def main() -> None:
    schema = f"bench_replicas_{uuid.uuid4().hex[:8]}"
    async with Store(POSTGRES_URL, schema=schema):
        pass
    print(f"bench_replicas: {SESSIONS} concurrent sessions (half handshake-era) x {CALLS} calls, "
          f"PostgreSQL store, scripted world model, limits set, {os.cpu_count()} CPUs")
    try:
        with tempfile.TemporaryDirectory() as name:
            folder = Path(name)
            async with replicas(folder, 1, redis=False, schema=schema) as bases:
                memory = await measure("1 replica, counters in memory", bases[0])
            async with replicas(folder, 1, redis=True, schema=schema) as bases:
                one = await measure("1 replica, Redis", bases[0])
            async with replicas(folder, 2, redis=True, schema=schema) as bases:
                with NginxProxy(folder / "nginx", [base.removeprefix("http://") for base in bases]) as proxy:
                    two = await measure("2 replicas behind nginx, Redis", proxy.url)
    finally:
        await drop_schema(schema)
    print(f"  Redis vs memory counting, 1 replica: alone p50 x{one[0] / memory[0]:.2f}, "
          f"loaded p50 x{one[1] / memory[1]:.2f}")
    print(f"  2 replicas + nginx vs 1 replica: alone p50 x{two[0] / one[0]:.2f}, loaded p50 x{two[1] / one[1]:.2f}, "
          f"throughput x{two[2] / one[2]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
