"""What the hosted service refuses: missing or wrong credentials, other tenants' episodes, oversize bodies,
untrusted Host/Origin headers, and settings that would expose it."""

from __future__ import annotations

import httpx
import pytest

from occusim.service._config import ConfigError
from occusim.service.app import create_app
from tests.helpers import API_KEYS, CHEST_PAIN, LiveServer, hosted_settings

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def server(tmp_path):
    with LiveServer(hosted_settings(tmp_path, max_body_bytes=64 * 1024)) as live:
        yield live


async def _episode(http: httpx.AsyncClient, server: LiveServer, tenant: str = "alice") -> dict:
    response = await http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=server.headers(tenant))
    assert response.status_code == 201
    return response.json()


async def test_the_mcp_url_needs_that_episodes_token(server):
    async with httpx.AsyncClient() as http:
        mine, other = await _episode(http, server), await _episode(http, server)
        url = mine["mcp_url"]
        attempts = {
            "missing": {},
            "wrong": {"Authorization": "Bearer ept_not-the-token"},
            "another episode's": {"Authorization": f"Bearer {other['token']}"},
            "the API key": server.headers(),
            "not bearer": {"Authorization": f"Basic {mine['token']}"},
        }
        for name, headers in attempts.items():
            response = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
            assert response.status_code == 401, name
            assert response.headers["www-authenticate"].startswith("Bearer")
            assert "episode token" in response.json()["error"], name
        accepted = await http.post(url, json=INITIALIZE,
                                   headers={**MCP_HEADERS, "Authorization": f"Bearer {mine['token']}"})
    assert accepted.status_code == 200


async def test_a_tenant_never_sees_another_tenants_episode(server):
    async with httpx.AsyncClient(base_url=server.url) as http:
        alices = await _episode(http, server, "alice")
        path = f"/v1/episodes/{alices['episode_id']}"
        read = await http.get(path, headers=server.headers("bob"))
        submitted = await http.post(f"{path}/submit", json={"answer": "x"}, headers=server.headers("bob"))
        missing = await http.get("/v1/episodes/0123456789abcdef", headers=server.headers("bob"))
        still_open = await http.get(path, headers=server.headers("alice"))
    assert read.status_code == submitted.status_code == missing.status_code == 404
    # The same answer as for an id that does not exist: nothing tells bob the episode is there.
    assert read.json()["error"] == missing.json()["error"].replace("0123456789abcdef", alices["episode_id"])
    assert still_open.json()["status"] == "open"


async def test_the_api_needs_a_known_key(server):
    async with httpx.AsyncClient(base_url=server.url) as http:
        for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": API_KEYS["alice"]}):
            for method, path in (("GET", "/v1/tasks"), ("POST", "/v1/episodes"), ("POST", "/v1/judge")):
                response = await http.request(method, path, json={"task_id": CHEST_PAIN}, headers=headers)
                assert response.status_code == 401, (method, path, headers)
                assert "API key" in response.json()["error"]
        assert (await http.get("/healthz")).status_code == 200


async def test_oversize_bodies_are_refused_with_the_limit(server):
    big = b'{"task_id": "' + b"x" * (65 * 1024) + b'"}'

    async def chunks():
        for start in range(0, len(big), 8192):
            yield big[start:start + 8192]

    async with httpx.AsyncClient(base_url=server.url, headers=server.headers()) as http:
        episode = await _episode(http, server)
        declared = await http.post("/v1/episodes", content=big, headers={"Content-Type": "application/json"})
        streamed = await http.post("/v1/episodes", content=chunks(), headers={"Content-Type": "application/json"})
        to_mcp = await http.post(episode["mcp_url"], content=big,
                                 headers={**MCP_HEADERS, "Authorization": f"Bearer {episode['token']}"})
    for response in (declared, streamed, to_mcp):
        assert response.status_code == 413
        assert "limit of 65536 bytes" in response.json()["error"]


async def test_untrusted_host_and_origin_are_refused(server):
    async with httpx.AsyncClient(base_url=server.url, headers=server.headers()) as http:
        episode = await _episode(http, server)
        token = {"Authorization": f"Bearer {episode['token']}"}
        rebound = await http.post(episode["mcp_url"], json=INITIALIZE,
                                  headers={**MCP_HEADERS, **token, "Host": "evil.example:8000"})
        cross_site = await http.post(episode["mcp_url"], json=INITIALIZE,
                                     headers={**MCP_HEADERS, **token, "Origin": "http://evil.example"})
        api = await http.get("/v1/tasks", headers={"Host": "evil.example"})
    assert rebound.status_code == 421 and "Host" in rebound.text
    assert cross_site.status_code == 403 and "Origin" in cross_site.text
    assert api.status_code == 421


def test_unsafe_settings_refuse_to_start(tmp_path):
    with pytest.raises(ConfigError, match="only allowed on a loopback host"):
        create_app(hosted_settings(tmp_path, no_auth=True, host="0.0.0.0"))
    with pytest.raises(ConfigError, match="no API keys configured"):
        create_app(hosted_settings(tmp_path, api_keys={}))
    create_app(hosted_settings(tmp_path, no_auth=True, api_keys={}, host="::1"))


@pytest.mark.parametrize("db", ["postgresql://occusim@db.internal/occusim", "postgresql+asyncpg://u@h:5432/d",
                                "postgres://u@h/d"])
def test_a_store_replicas_share_needs_the_shared_token_secret(tmp_path, db):
    with pytest.raises(ConfigError, match="set token_secret .* to the same value on each"):
        create_app(hosted_settings(tmp_path, db=db, token_secret=None))
    create_app(hosted_settings(tmp_path, token_secret=None))  # a SQLite file belongs to one host


async def test_no_secret_reaches_the_store(tmp_path):
    settings = hosted_settings(tmp_path)
    with LiveServer(settings) as live:
        async with httpx.AsyncClient() as http:
            episode = await _episode(http, live)
    stored = b"".join(path.read_bytes() for path in tmp_path.glob("hosted.db*"))
    assert episode["episode_id"].encode() in stored
    assert episode["token"].encode() not in stored
    assert API_KEYS["alice"].encode() not in stored


async def test_a_request_chooses_only_a_world_model_the_operator_offers(tmp_path):
    settings = hosted_settings(tmp_path, world_models=["scripted/other"])
    with LiveServer(settings) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=server.headers()) as http:

            async def create(**body: object) -> httpx.Response:
                return await http.post("/v1/episodes", json={"task_id": CHEST_PAIN, **body})

            refused = {model: await create(world_model=model) for model in
                       ("local:/etc/shadow", "local:/no/such/file.gguf", "openai/gpt-4.1", "local")}
            too_long = await create(world_model="openai/" + "x" * 300)
            default, same, offered = await create(), await create(world_model="scripted/triage"), \
                await create(world_model="scripted/other")
            chosen = await http.get(f"/v1/episodes/{offered.json()['episode_id']}")

    for model, response in refused.items():
        assert response.status_code == 403, model
        assert response.json()["type"] == "model_not_allowed"
        assert response.json()["error"] == (f"world_model {model!r} is not offered by this service; leave it unset "
                                             "for the default or choose one of: scripted/triage, scripted/other")
    assert too_long.status_code == 422 and "world_model" in too_long.text
    assert [r.status_code for r in (default, same, offered)] == [201, 201, 201]
    assert chosen.json()["world_model"] == "scripted/other"


def test_a_local_model_file_cannot_be_offered_to_requests(tmp_path):
    with pytest.raises(ConfigError, match="local:/models/x.gguf: a local model file can be only the default"):
        hosted_settings(tmp_path, world_models=["local:/models/x.gguf"])
