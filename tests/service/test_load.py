"""Load: many concurrent MCP sessions on one service process, and on two service processes sharing one
PostgreSQL database, each with a deliberately small connection pool: every call answered, every step stored,
no error. Marked `load` (deselect with -m "not load"); bounded by OCCUSIM_LOAD_SESSIONS (default 500),
OCCUSIM_LOAD_CALLS per session (default 6) and OCCUSIM_LOAD_SECONDS (default 900). Loopback only.

Under load a saturated service queues calls rather than failing them, so the clients here wait as long as
the whole test may take; a client with a short read timeout would give up on calls that still succeed."""

from __future__ import annotations

import asyncio
import os
import uuid

import httpx
import pytest

from occusim.server import Store
from tests.helpers import (
    POSTGRES_URL,
    LiveServer,
    drop_schema,
    hosted_settings,
    play_triage_episode,
    service_processes,
)

pytestmark = [pytest.mark.load, pytest.mark.postgres]

SESSIONS = int(os.environ.get("OCCUSIM_LOAD_SESSIONS", "500"))
CALLS = int(os.environ.get("OCCUSIM_LOAD_CALLS", "6"))
SECONDS = float(os.environ.get("OCCUSIM_LOAD_SECONDS", "900"))
# A model that takes a moment, so sessions overlap the way paid calls do; a pool far smaller than the
# number of sessions, so the database is where they meet.
MODEL_DELAY = "0.05"
POOL = {"db_pool_size": 2, "db_max_overflow": 1}


@pytest.fixture
async def schema():
    name = f"occusim_load_{uuid.uuid4().hex[:12]}"
    yield name
    await drop_schema(name)


async def _session(http: httpx.AsyncClient, base: str) -> str:
    body = await play_triage_episode(http, base, CALLS, read_timeout=SECONDS)
    return str(body["episode_id"])


async def _run_sessions(bases: list[str]) -> list[str]:
    limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
    async with httpx.AsyncClient(timeout=httpx.Timeout(SECONDS), limits=limits) as http:
        async with asyncio.timeout(SECONDS):
            outcomes = await asyncio.gather(
                *(_session(http, bases[n % len(bases)]) for n in range(SESSIONS)), return_exceptions=True
            )
    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert not failures, f"{len(failures)} of {SESSIONS} sessions failed, first: {failures[0]!r}"
    return [outcome for outcome in outcomes if isinstance(outcome, str)]


async def _assert_all_stored(schema: str, episode_ids: list[str]) -> None:
    async with Store(POSTGRES_URL, schema=schema) as store:
        records = await asyncio.gather(*(store.load_episode(episode_id) for episode_id in episode_ids))
    assert len(records) == SESSIONS
    for record in records:
        assert record.status in ("submitted", "judged")
        assert len(record.steps) == CALLS and not any(step.is_error for step in record.steps)


async def test_one_process_serves_every_session_without_error(tmp_path, schema, monkeypatch):
    monkeypatch.setenv("OCCUSIM_TEST_MODEL_DELAY", MODEL_DELAY)
    settings = hosted_settings(tmp_path, db=POSTGRES_URL, db_schema=schema, world_model="scripted/triage-slow", **POOL)
    with LiveServer(settings) as server:
        episode_ids = await _run_sessions([server.url])
    await _assert_all_stored(schema, episode_ids)


async def test_two_processes_sharing_postgresql_serve_every_session_without_error(tmp_path, schema):
    async with service_processes(tmp_path, schema, env={"OCCUSIM_TEST_MODEL_DELAY": MODEL_DELAY}, **POOL) as bases:
        episode_ids = await _run_sessions(bases)
    await _assert_all_stored(schema, episode_ids)
