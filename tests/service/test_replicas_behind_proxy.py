"""N replicas behind one address: nginx (Debian's package, round robin, no stickiness) in front of service
replicas sharing PostgreSQL and Redis. Sessions of both protocol eras are spread over the replicas request by
request. The load test (`load` marker) drives OCCUSIM_PROXY_SESSIONS new-protocol sessions (default 800) and
OCCUSIM_PROXY_LEGACY_SESSIONS handshake-era sessions (default 200) at once through the proxy: 1,000 concurrent
sessions on two replicas, with timeouts that allow for a 2-core machine (OCCUSIM_LOAD_SECONDS, default 900)."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

import httpx
import pytest

from occusim.server import Store
from tests.helpers import (
    LEGACY,
    MODERN,
    POSTGRES_URL,
    REDIS_URL,
    LiveServer,
    NginxProxy,
    drop_schema,
    hosted_settings,
    play_triage_episode,
    service_processes,
)

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

MODERN_SESSIONS = int(os.environ.get("OCCUSIM_PROXY_SESSIONS", "800"))
LEGACY_SESSIONS = int(os.environ.get("OCCUSIM_PROXY_LEGACY_SESSIONS", "200"))
CALLS = int(os.environ.get("OCCUSIM_LOAD_CALLS", "4"))
SECONDS = float(os.environ.get("OCCUSIM_LOAD_SECONDS", "900"))
MODEL_DELAY = "0.05"


@pytest.fixture
def schema():
    return f"occusim_proxy_{uuid.uuid4().hex[:12]}"


async def _episode(http: httpx.AsyncClient, base: str, mode: str, calls: int) -> str:
    body = await play_triage_episode(http, base, calls, mode, read_timeout=SECONDS)
    assert body["mcp_url"].startswith(base), "the episode's URL is the proxy's"
    return str(body["episode_id"])


async def _open_endpoints(http: httpx.AsyncClient, bases: list[str]) -> list[int]:
    return [(await http.get(f"{base}/healthz")).json()["open_endpoints"] for base in bases]


async def test_sessions_of_both_eras_are_spread_over_replicas_without_stickiness(tmp_path, schema, nginx):
    settings = hosted_settings(tmp_path, db=POSTGRES_URL, db_schema=schema, redis=REDIS_URL,
                               redis_prefix=f"test-{uuid.uuid4().hex}")
    try:
        with LiveServer(settings) as first, LiveServer(settings) as second, \
                NginxProxy(tmp_path / "nginx", [f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}"]) as proxy:
            async with httpx.AsyncClient(timeout=60) as http:
                for mode in (LEGACY, MODERN):
                    await _episode(http, proxy.url, mode, calls=4)
                # Round robin sent each session's requests to both replicas: both built its endpoint.
                assert await _open_endpoints(http, [first.url, second.url]) == [2, 2]
                usage = (await http.get(f"{proxy.url}/v1/usage", headers=first.headers())).json()
                assert (usage["tenant"], usage["open_episodes"]) == ("alice", 0), usage
        assert "error" not in proxy.errors().lower(), proxy.errors()
    finally:
        await drop_schema(schema)


@pytest.mark.load
async def test_two_replicas_behind_nginx_serve_every_session_of_either_era(tmp_path, schema, nginx):
    try:
        async with service_processes(tmp_path, schema, env={"OCCUSIM_TEST_MODEL_DELAY": MODEL_DELAY},
                                     redis=REDIS_URL, redis_prefix=f"test-{uuid.uuid4().hex}",
                                     db_pool_size=5, db_max_overflow=5) as bases:
            with NginxProxy(tmp_path / "nginx", [base.removeprefix("http://") for base in bases],
                            read_timeout=int(SECONDS)) as proxy:
                episode_ids = await _drive(proxy.url)
                async with httpx.AsyncClient() as http:
                    spread = await _open_endpoints(http, bases)
                proxy_errors = proxy.errors()
        assert min(spread) > 0, f"the proxy sent every session to one replica: {spread}"
        assert "upstream" not in proxy_errors, proxy_errors[-2000:]
        async with Store(POSTGRES_URL, schema=schema) as store:
            records = await asyncio.gather(*(store.load_episode(episode_id) for episode_id in episode_ids))
        assert len(records) == MODERN_SESSIONS + LEGACY_SESSIONS
        for record in records:
            assert record.status in ("submitted", "judged")
            assert len(record.steps) == CALLS and not any(step.is_error for step in record.steps)
    finally:
        await drop_schema(schema)


async def _drive(base: str) -> list[str]:
    modes = [MODERN] * MODERN_SESSIONS + [LEGACY] * LEGACY_SESSIONS
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=httpx.Timeout(SECONDS), limits=limits) as http:
        async with asyncio.timeout(SECONDS):
            outcomes = await asyncio.gather(*(_episode(http, base, mode, CALLS) for mode in modes),
                                            return_exceptions=True)
    failures = [(mode, outcome) for mode, outcome in zip(modes, outcomes, strict=True)
                if isinstance(outcome, BaseException)]
    assert not failures, f"{len(failures)} of {len(modes)} sessions failed, first: {failures[0]!r}"
    return [outcome for outcome in outcomes if isinstance(outcome, str)]


def test_the_documented_proxy_block_is_the_one_tested():
    from tests.helpers import nginx_config

    documented = (Path(__file__).parents[2] / "docs" / "deployment.md").read_text()
    generated = nginx_config(Path("/tmp/x"), ["10.0.0.1:8000"], 8080)
    for directive in ("proxy_http_version 1.1;", 'proxy_set_header Connection "";', "proxy_buffering off;",
                      "proxy_next_upstream off;", "proxy_set_header Host $http_host;"):
        assert directive in generated and directive in documented, directive
