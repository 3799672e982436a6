"""Per-tenant limits: open episodes, tool calls per minute and model spend per day, enforced across two
replicas through Redis (and in memory on one), answered 429 with Retry-After, and shown at GET /v1/usage."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from occusim.environments import Usage
from occusim.rest import ErrorBody
from occusim.server import EpisodeService, Store
from occusim.service import ConfigError, MemoryCounters, RedisCounters, TenantUsage, load_settings
from tests.helpers import (
    API_KEYS,
    CHEST_PAIN,
    POSTGRES_URL,
    REDIS_URL,
    STUB_KEY,
    LiveServer,
    ProviderStub,
    RawSession,
    Reply,
    TriageModel,
    completion_body,
    drop_schema,
    hosted_settings,
    simulate_triage,
    tracked_call,
    triage_catalog,
)

LATEST_HANDSHAKE = "2025-11-25"


async def _counters(kind: str) -> MemoryCounters | RedisCounters:
    return MemoryCounters() if kind == "memory" else RedisCounters(REDIS_URL, prefix=f"test-{uuid.uuid4().hex}")


@pytest.mark.parametrize("kind", ["memory", pytest.param("redis", marks=pytest.mark.redis)])
async def test_counters_add_expire_and_flag(kind):
    counters = await _counters(kind)
    try:
        assert await counters.add("calls", 2, ttl=1) == 2
        assert await counters.add("calls", 0.5, ttl=1) == 2.5
        assert await counters.value("calls") == 2.5 and await counters.value("other") == 0
        assert not await counters.flagged("ended")
        await counters.flag("ended", ttl=60)
        assert await counters.flagged("ended")
        await asyncio.sleep(1.2)
        assert await counters.value("calls") == 0, "a window's count expires with it"
        assert await counters.add("calls", -1, ttl=60) == 0, "a count never goes below 0"
    finally:
        await counters.close()


def _refusal(response: httpx.Response, kind: str) -> ErrorBody:
    assert response.status_code == 429, response.text
    assert 1 <= int(response.headers["retry-after"]) <= 86_400
    body = ErrorBody.model_validate(response.json())
    assert body.type == kind
    return body


async def _create(http: httpx.AsyncClient, url: str, tenant: str = "alice") -> httpx.Response:
    return await http.post(f"{url}/v1/episodes", json={"task_id": CHEST_PAIN},
                           headers={"Authorization": f"Bearer {API_KEYS[tenant]}"})


async def _usage(http: httpx.AsyncClient, url: str, tenant: str = "alice") -> TenantUsage:
    response = await http.get(f"{url}/v1/usage", headers={"Authorization": f"Bearer {API_KEYS[tenant]}"})
    assert response.status_code == 200, response.text
    return TenantUsage.model_validate(response.json())


async def _clear_of_the_minute_edge(margin: float = 12.0) -> None:
    """Start counting calls well inside one calendar minute, so the window does not turn mid-test."""
    left = 60 - time.time() % 60
    if left < margin:
        await asyncio.sleep(left + 0.2)


@pytest.mark.postgres
@pytest.mark.redis
async def test_limits_hold_across_two_replicas(tmp_path):
    schema = f"limits_{uuid.uuid4().hex[:10]}"
    settings = hosted_settings(
        tmp_path, db=POSTGRES_URL, db_schema=schema, redis=REDIS_URL, redis_prefix=f"test-{uuid.uuid4().hex}",
        tenant_limits={"alice": {"open_episodes": 2, "tool_calls_per_minute": 3}},
    )
    try:
        with LiveServer(settings) as first, LiveServer(settings) as second:
            urls = [first.url, second.url]
            async with httpx.AsyncClient(timeout=60) as http:
                # Concurrent creations on both replicas: never more than the limit gets through.
                attempts = await asyncio.gather(*(_create(http, urls[n % 2]) for n in range(6)))
                assert {response.status_code for response in attempts} <= {201, 429}
                created = [r.json() for r in attempts if r.status_code == 201]
                assert len(created) <= 2
                _refusal(next(r for r in attempts if r.status_code == 429), "open_episode_limit")
                # Refused ones retry, one at a time: exactly the limit is reached.
                while len(created) < 2:
                    retried = await _create(http, urls[len(created) % 2])
                    assert retried.status_code == 201, retried.text
                    created.append(retried.json())
                _refusal(await _create(http, urls[1]), "open_episode_limit")
                # Another tenant has no limit.
                assert [(await _create(http, urls[n % 2], "bob")).status_code for n in range(3)] == [201] * 3

                await _clear_of_the_minute_edge()
                session = RawSession(http, urls, created[0])
                assert (await session.open(0, LATEST_HANDSHAKE)).status_code == 200
                for number in range(3):
                    called = await session.call(number % 2, "get_patient", {"patient_id": "P2"}, id=number + 1)
                    assert called.status_code == 200, called.text
                _refusal(await session.call(1, "get_patient", {"patient_id": "P2"}, id=9), "tool_call_rate_limit")
                # A refused call is not run: the episode holds the three calls that were let through.
                assert (await session.send(0, body={"jsonrpc": "2.0", "id": 10, "method": "tools/list"})).status_code == 200
                usage = await _usage(http, urls[1])
                assert (usage.tenant, usage.open_episodes, usage.tool_calls_this_minute) == ("alice", 2, 3)
                assert usage.limits.open_episodes == 2 and usage.limits.cost_per_day_usd is None
                assert 0 < usage.minute_resets_in_seconds <= 60
                bob = await _usage(http, urls[0], "bob")
                assert (bob.open_episodes, bob.tool_calls_this_minute, bob.limits.open_episodes) == (3, 0, None)

                submitted = await http.post(
                    f"{urls[1]}/v1/episodes/{created[1]['episode_id']}/submit", json={"answer": "done"},
                    headers={"Authorization": f"Bearer {API_KEYS['alice']}"})
                assert submitted.status_code == 200, submitted.text
                assert (await _create(http, urls[0])).status_code == 201, "a submitted episode frees its place"
                status = await http.get(f"{urls[0]}/v1/episodes/{created[0]['episode_id']}",
                                        headers={"Authorization": f"Bearer {API_KEYS['alice']}"})
        assert status.json()["step_count"] == 3
    finally:
        await drop_schema(schema)


def _priced_triage(number: int, body: dict[str, Any], key: str) -> Reply:
    """The triage world model behind an OpenAI-compatible endpoint, each answer priced at 100k prompt tokens."""
    prompt = next(message["content"] for message in body["messages"] if message["role"] == "user")
    tracked = tracked_call(prompt)
    assert tracked is not None, prompt[:500]
    answer = completion_body(json.dumps(simulate_triage(*tracked)))
    answer["model"] = "gpt-4o-mini"
    answer["usage"] = {"prompt_tokens": 100_000, "completion_tokens": 10, "total_tokens": 100_010}
    return Reply(answer)


async def test_spend_per_day_is_counted_from_each_step_and_capped_on_one_replica(tmp_path, monkeypatch):
    with ProviderStub(_priced_triage).running() as stub:
        monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_BASE", stub.url)
        monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_KEY", STUB_KEY)
        # No Redis: one replica counts in its own memory. gpt-4o-mini's price makes each call ~$0.015.
        settings = hosted_settings(tmp_path, world_model="openai/gpt-4o-mini", limits={"cost_per_day_usd": 0.02},
                                   tenant_limits={"bob": {"cost_per_day_usd": None}})
        with LiveServer(settings) as server:
            async with httpx.AsyncClient(timeout=60) as http:
                session = RawSession(http, [server.url], (await _create(http, server.url)).json())
                assert (await session.open(0, LATEST_HANDSHAKE)).status_code == 200
                for number in range(2):
                    called = await session.call(0, "get_patient", {"patient_id": "P2"}, id=number + 1)
                    assert called.status_code == 200 and not called.json()["result"]["isError"], called.text
                usage = await _usage(http, server.url)
                assert 0.02 <= usage.cost_today_usd < 0.05 and usage.limits.cost_per_day_usd == 0.02
                refused = _refusal(await session.call(0, "get_patient", {"patient_id": "P2"}, id=3), "daily_cost_limit")
                assert "00:00 UTC" in refused.error
                _refusal(await _create(http, server.url), "daily_cost_limit")
                # bob's own setting lifts the default cap; his spend is his own.
                assert (await _create(http, server.url, "bob")).status_code == 201
                assert (await _usage(http, server.url, "bob")).cost_today_usd == 0
        assert len(stub.requests) == 2, "the refused call never reached the model"


def test_limits_name_only_known_tenants_and_refuse_negative_values():
    with pytest.raises(ConfigError, match="tenant_limits names tenants without an API key: carol"):
        load_settings(overrides={"api_keys": API_KEYS, "tenant_limits": {"carol": {"open_episodes": 1}}}, environ={})
    with pytest.raises(ConfigError, match="limits.open_episodes: Input should be greater than or equal to 0"):
        load_settings(overrides={"api_keys": API_KEYS, "limits": {"open_episodes": -1}}, environ={})


def test_serve_refuses_a_redis_it_cannot_reach(tmp_path, capsys, monkeypatch):
    from occusim.clients.cli import main

    monkeypatch.setenv("OCCUSIM_API_KEYS", "k-0123456789abcdef")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    code = main(["serve", "--http", "--no-bundled", "--db", str(tmp_path / "s.db"), "--redis", "redis://127.0.0.1:1/0"])
    assert code == 2
    err = capsys.readouterr().err
    assert "Redis at redis://127.0.0.1:1/0" in err and "drop --redis" in err
    assert main(["serve", "--http", "--no-bundled", "--max-open-episodes", "-1"]) == 2
    assert "open_episodes: Input should be greater than or equal to 0" in capsys.readouterr().err
    assert main(["serve", "some/task", "--redis", "redis://127.0.0.1:6379/0"]) == 2
    assert "need --http" in capsys.readouterr().err


class _PricedVerdict(BaseModel):
    passed: bool = True
    usage: Usage


async def test_a_judgment_reports_its_cost_with_the_tenant(tmp_path):
    spent: list[tuple[str | None, float]] = []

    async def on_cost(tenant: str | None, cost: float) -> None:
        spent.append((tenant, cost))

    async def priced_judge(task: Any, scenario: Any, record: Any) -> BaseModel:
        return _PricedVerdict(usage=Usage(cost_usd=0.25, calls=3))

    async with Store(tmp_path / "store.db") as store:
        service = EpisodeService(triage_catalog(), store, world_model=TriageModel().model, judge=priced_judge,
                                 on_cost=on_cost)
        episode = await service.create(CHEST_PAIN, tenant="alice")
        await episode.step("list_patients", {})
        await episode.submit("done")
    assert spent == [("alice", 0.25)], "the scripted world model is free; the judgment is not"
