"""Handshake-era MCP sessions without stickiness: a session opened on one replica is taken up by another,
request by request, and a session ended on one is over on all (through Redis)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

from occusim.service import MemoryCounters
from occusim.service._legacy_sessions import LegacySessions, negotiated_version
from tests.helpers import (
    CHEST_PAIN,
    POSTGRES_URL,
    REDIS_URL,
    SESSION_HEADER,
    LiveServer,
    RawSession,
    TriageModel,
    drop_schema,
    hosted_settings,
    rpc,
)

OLDEST = HANDSHAKE_PROTOCOL_VERSIONS[0]


def _sessions() -> LegacySessions:
    return LegacySessions(b"k" * 32, MemoryCounters(), TransportSecuritySettings())


def test_a_session_id_names_its_episode_and_version_and_cannot_be_forged():
    sessions = _sessions()
    issued = sessions.issue("episode-a", OLDEST)
    assert sessions.version_of("episode-a", issued) == OLDEST
    assert sessions.version_of("episode-b", issued) is None
    nonce, version, mac = issued.split(".")
    assert sessions.version_of("episode-a", f"{nonce}.{LATEST_HANDSHAKE_VERSION}.{mac}") is None
    assert sessions.version_of("episode-a", f"{nonce}x.{version}.{mac}") is None
    assert sessions.version_of("episode-a", "not-a-session") is None
    other_key = LegacySessions(b"z" * 32, MemoryCounters(), TransportSecuritySettings())
    assert other_key.version_of("episode-a", issued) is None


def test_negotiation_follows_the_handshake_versions():
    assert negotiated_version(OLDEST) == OLDEST
    assert negotiated_version("1999-01-01") == LATEST_HANDSHAKE_VERSION
    assert negotiated_version(None) == LATEST_HANDSHAKE_VERSION


async def _created(http: httpx.AsyncClient, server: LiveServer) -> dict[str, Any]:
    response = await http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=server.headers())
    assert response.status_code == 201, response.text
    return response.json()


@pytest.mark.postgres
@pytest.mark.redis
async def test_a_session_moves_between_replicas_request_by_request(tmp_path):
    schema = f"legacy_{uuid.uuid4().hex[:10]}"
    world = TriageModel(name=f"counted-{uuid.uuid4().hex}")
    settings = hosted_settings(tmp_path, db=POSTGRES_URL, db_schema=schema, redis=REDIS_URL,
                               redis_prefix=f"test-{uuid.uuid4().hex}", world_model=world.model)
    try:
        with LiveServer(settings) as first, LiveServer(settings) as second:
            async with httpx.AsyncClient(timeout=60) as http:
                replicas = RawSession(http, [first.url, second.url], await _created(http, first))
                opened = await replicas.send(0, body=rpc("initialize", {
                    "protocolVersion": OLDEST, "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"}}))
                assert opened.status_code == 200, opened.text
                assert opened.json()["result"]["protocolVersion"] == OLDEST
                replicas.session = opened.headers[SESSION_HEADER]
                # A 2024-11-05 client sends no version header: the session id carries it.
                acknowledged = await replicas.send(1, body=rpc("notifications/initialized", id=None))
                assert acknowledged.status_code == 202
                listed = await replicas.send(1, body=rpc("tools/list", id=2))
                assert listed.status_code == 200 and listed.headers[SESSION_HEADER] == replicas.session
                assert "submit_result" in {tool["name"] for tool in listed.json()["result"]["tools"]}
                for number, replica in enumerate([0, 1, 0, 1]):
                    called = await replicas.send(replica, body=rpc("tools/call", {
                        "name": "set_priority", "arguments": {"patient_id": "P1", "priority": 1 + number % 2}},
                        id=10 + number))
                    assert called.status_code == 200, called.text
                    assert not called.json()["result"]["isError"], called.text
                # Each replica caught up from the store before simulating: one model call per tool call.
                assert world.calls == 4
                stream = await replicas.send(1, "GET")
                assert stream.status_code == 405 and stream.headers["allow"] == "POST, DELETE"
                ended = await replicas.send(1, "DELETE")
                assert ended.status_code == 200
                after = await replicas.send(0, body=rpc("tools/list", id=3))
                assert after.status_code == 404, after.text
                # A session id is the episode's own: presented to another episode, it is unknown there.
                other = RawSession(http, [first.url, second.url], await _created(http, second))
                other.session = opened.headers[SESSION_HEADER]
                assert (await other.send(0, body=rpc("tools/list", id=4))).status_code == 404
                status = await http.get(f"{first.url}/v1/episodes/{replicas.created['episode_id']}",
                                        headers=first.headers())
        steps = status.json()["steps"]
        assert [step["index"] for step in steps] == [0, 1, 2, 3]
        assert [step["observation"]["priority"] for step in steps] == [1, 2, 1, 2]
    finally:
        await drop_schema(schema)


async def test_a_request_without_a_session_that_is_not_initialize_is_refused(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(timeout=60) as http:
            replicas = RawSession(http, [server.url], await _created(http, server))
            refused = await replicas.send(0, body=rpc("tools/list"))
            assert refused.status_code == 400 and "Missing session ID" in refused.text
            replicas.session = "forged.2025-06-18.AAAA"
            assert (await replicas.send(0, body=rpc("tools/list"))).status_code == 404
            assert (await replicas.send(0, "DELETE")).status_code == 404
