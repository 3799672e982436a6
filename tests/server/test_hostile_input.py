"""Input no record can hold (lone surrogates, NUL, deep nesting, non-finite numbers) is refused at the
boundary: by Episode.step/submit, over MCP as an `is_error` result, over REST as a 400. No model call is
made, nothing is stored, and every stored episode stays readable, on SQLite and on PostgreSQL."""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any

import asyncpg
import httpx
import pytest
from mcp import Client

from occusim.server import RefusedInputError, Store, build_mcp_server
from occusim.service import EpisodeView
from tests.helpers import CHEST_PAIN, POSTGRES_URL, LiveServer, TriageModel, hosted_settings, start_episode

PG_URL = POSTGRES_URL
PG_DSN = PG_URL.replace("postgresql+asyncpg://", "postgresql://", 1)


def nested(depth: int, leaf: Any = "P1") -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


HOSTILE_ARGUMENTS = {
    "lone surrogate": {"patient_id": "P\ud800"},
    "NUL": {"patient_id": "P1\x00"},
    "surrogate key": {"patient_id": "P1", "\udfff": 1},
    "undeclared argument 65 deep": {"patient_id": "P1", "extra": nested(65)},
    "400 deep": {"patient_id": nested(400)},
    "50,000 deep": {"patient_id": nested(50_000)},
    "infinity": {"patient_id": "P1", "weight": float("inf")},
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request, tmp_path):
    """A fresh store: a SQLite file, or a schema of its own on the PostgreSQL server (dropped after)."""
    if request.param == "sqlite":
        async with Store(tmp_path / "episodes.db") as store:
            yield store
        return
    schema = f"occusim_test_{uuid.uuid4().hex[:12]}"
    async with Store(PG_URL, schema=schema) as store:
        yield store
    connection = await asyncpg.connect(PG_DSN)
    try:
        await connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    finally:
        await connection.close()


async def assert_readable(store: Store, episode_id: str) -> EpisodeView:
    record = await store.load_episode(episode_id)
    view = EpisodeView(
        episode_id=record.id, task_id=record.task_id, scenario_id=record.scenario_id, status=record.status,
        mode=record.mode, world_model=record.world_model, faults=record.faults, step_count=len(record.steps),
        steps=record.steps, final_answer=record.final_answer,
    )
    view.model_dump_json().encode("utf-8")
    return view


@pytest.mark.parametrize("arguments", HOSTILE_ARGUMENTS.values(), ids=HOSTILE_ARGUMENTS.keys())
async def test_step_refuses_unstorable_arguments_without_a_model_call(store, arguments):
    model = TriageModel()
    episode = await start_episode(store, model)

    with pytest.raises(RefusedInputError) as raised:
        await episode.step("get_patient", arguments)

    assert str(raised.value).startswith("the arguments cannot be accepted: ")
    raised.value.args[0].encode("utf-8")
    assert model.calls == 0 and episode.record.steps == []
    await episode.step("get_patient", {"patient_id": "P1"})
    assert (await assert_readable(store, episode.id)).step_count == 1


async def test_the_argument_depth_is_a_setting(store):
    model = TriageModel()
    episode = await start_episode(store, model)
    episode.max_argument_depth = 3
    with pytest.raises(RefusedInputError, match="nested deeper than the limit of 3 levels"):
        await episode.step("get_patient", {"patient_id": "P1", "extra": {"a": {"b": {"c": 1}}}})
    outcome = await episode.step("get_patient", {"patient_id": "P1", "extra": {"a": {"b": 1}}})
    assert outcome.is_error and outcome.observation["error"]["type"] == "invalid_arguments"  # the schema's turn
    assert model.calls == 0


@pytest.mark.parametrize("answer", ["done \ud800", "done \x00 really", 42], ids=["surrogate", "NUL", "not text"])
async def test_submit_refuses_an_unstorable_answer_and_stays_open(store, answer):
    episode = await start_episode(store, TriageModel())

    with pytest.raises(RefusedInputError):
        await episode.submit(answer)

    assert episode.status == "open"
    record = await episode.submit("P1 is priority 1 ✓")
    assert record.status == "submitted"
    assert (await assert_readable(store, episode.id)).final_answer == "P1 is priority 1 ✓"


async def test_a_world_model_reply_with_nul_is_repaired_not_stored(store):
    bad = {"observation": {"id": "P1", "name": "Ana\x00", "priority": 3}, "state_patch": []}
    model = TriageModel(replies=[bad])
    episode = await start_episode(store, model)

    outcome = await episode.step("get_patient", {"patient_id": "P1"})

    assert not outcome.is_error and outcome.observation["name"] == "Ana Ruiz" and model.calls == 2
    repair = model.requests[1][0][-1]["content"]
    assert "observation.name: contains a NUL character" in repair
    await assert_readable(store, episode.id)


async def test_over_mcp_refused_input_is_an_is_error_result(store):
    model = TriageModel()
    episode = await start_episode(store, model)
    async with Client(build_mcp_server(episode)) as client:
        result = await client.call_tool("get_patient", {"patient_id": "P\ud800"})
        assert result.is_error
        assert result.structured_content["error"]["type"] == "invalid_arguments"
        assert "unpaired surrogate" in result.structured_content["error"]["message"]
        deep = await client.call_tool("get_patient", {"patient_id": "P1", "x": nested(100)})
        assert deep.is_error and "nested deeper than the limit of 64 levels" in deep.structured_content["error"]["message"]
        answer = await client.call_tool("submit_result", {"answer": "nul \x00"})
        assert answer.is_error and answer.structured_content["error"]["type"] == "invalid_arguments"
        done = await client.call_tool("submit_result", {"answer": "ok"})
        assert not done.is_error
    assert model.calls == 0
    await assert_readable(store, episode.id)


def post_raw(http: httpx.Client, url: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return http.post(url, content=body, headers={**headers, "Content-Type": "application/json"})


HOSTILE_BODIES = {
    "lone surrogate": b'{"task_id": "\\ud800"}',
    "NUL": b'{"task_id": "triage-desk/chest-pain\\u0000"}',
    "surrogate key": b'{"task_id": "triage-desk/chest-pain", "\\udfff": 1}',
    "50,000 deep": b'{"task_id": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    "200 deep": b'{"task_id": ' + b"[" * 200 + b"]" * 200 + b"}",
    "Infinity": b'{"task_id": "triage-desk/chest-pain", "seed": Infinity}',
    "5000 digits": b'{"task_id": "triage-desk/chest-pain", "seed": ' + b"9" * 5000 + b"}",
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def live_server(request, tmp_path):
    overrides: dict[str, Any] = {}
    if request.param == "postgres":
        overrides = {"db": PG_URL, "db_schema": f"occusim_test_{uuid.uuid4().hex[:12]}"}
    with LiveServer(hosted_settings(tmp_path, **overrides)) as server:
        yield server
    if request.param == "postgres":
        async def drop() -> None:
            connection = await asyncpg.connect(PG_DSN)
            try:
                await connection.execute(f'DROP SCHEMA IF EXISTS "{overrides["db_schema"]}" CASCADE')
            finally:
                await connection.close()

        asyncio.run(drop())


def test_over_rest_every_hostile_body_is_a_400_naming_the_field(live_server):
    server, headers = live_server, live_server.headers()
    with httpx.Client(timeout=60) as http:
        for name, body in HOSTILE_BODIES.items():
            response = post_raw(http, f"{server.url}/v1/episodes", body, headers)
            assert response.status_code == 400, (name, response.text)
            assert response.json()["type"] == "invalid_json", name
        refused = post_raw(http, f"{server.url}/v1/episodes", HOSTILE_BODIES["lone surrogate"], headers).json()
        assert refused["errors"] == [{"field": "task_id", "type": "invalid_json_value", "message":
                                      "contains an unpaired surrogate (U+D800) at position 0, which is not valid "
                                      "Unicode text"}]

        created = http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=headers).json()
        submit = f"{server.url}/v1/episodes/{created['episode_id']}/submit"
        for answer in (b'"\\ud800"', b'"a\\u0000b"', b"[" * 5000 + b"]" * 5000):
            response = post_raw(http, submit, b'{"answer": ' + answer + b"}", headers)
            assert response.status_code == 400, response.text
        judge = post_raw(http, f"{server.url}/v1/judge", b'{"task": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
                         headers)
        assert judge.status_code == 400 and judge.json()["type"] == "invalid_json"
        large = b'{"task": {"pad": "' + b"x" * 200_000 + b'", "bad": "\\u0000"}}'  # checked off the event loop
        refused_large = post_raw(http, f"{server.url}/v1/judge", large, headers)
        assert refused_large.status_code == 400 and refused_large.json()["errors"][0]["field"] == "task.bad"
        assert http.get(f"{server.url}/v1/episodes/a%00b", headers=headers).status_code == 404

        status = http.get(f"{server.url}/v1/episodes/{created['episode_id']}", headers=headers)
        assert status.status_code == 200 and status.json()["status"] == "open"
        done = http.post(submit, json={"answer": "P1 is priority 1"}, headers=headers)
        assert done.status_code == 200 and done.json()["final_answer"] == "P1 is priority 1"


def test_over_mcp_http_arguments_beyond_the_depth_setting_cost_no_model_call(tmp_path):
    model = TriageModel(name=f"hostile-{uuid.uuid4().hex[:8]}")
    with LiveServer(hosted_settings(tmp_path, world_model=model.model, max_argument_depth=8)) as server, \
            httpx.Client(timeout=60) as http:
        created = http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=server.headers()).json()
        mcp_headers = {"Authorization": f"Bearer {created['token']}", "Accept": "application/json, text/event-stream",
                       "Content-Type": "application/json", "MCP-Protocol-Version": "2025-11-25"}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}
        opened = http.post(created["mcp_url"], headers=mcp_headers, json=init)
        mcp_headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": "get_patient", "arguments": {"patient_id": "P1", "x": nested(9)}}}
        answer = http.post(created["mcp_url"], headers=mcp_headers, content=json.dumps(call)).json()
        status = http.get(f"{server.url}/v1/episodes/{created['episode_id']}", headers=server.headers())
    assert answer["result"]["isError"] is True
    assert "nested deeper than the limit of 8 levels" in answer["result"]["structuredContent"]["error"]["message"]
    assert model.calls == 0 and status.status_code == 200 and status.json()["step_count"] == 0
