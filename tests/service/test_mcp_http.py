"""The hosted service on a real uvicorn: the episode API and each episode's MCP endpoint, driven by the
official SDK client in the 2026-07-28 mode (no session id) and the legacy handshake mode."""

from __future__ import annotations

import asyncio
import signal
import threading
import time
import uuid

import httpx
import pytest

from occusim.clients.cli import main
from occusim.environments import EpisodeRecord, Task
from occusim.server import EpisodeService, Store
from occusim.service._api_models import CreateEpisodeRequest, EpisodeView
from tests.helpers import (
    API_KEYS,
    CHEST_PAIN,
    LEGACY,
    MODERN,
    MODERN_VERSION,
    POSTGRES_URL,
    PYTHON,
    TOKEN_SECRET,
    TRIAGE,
    LiveServer,
    drop_schema,
    free_port,
    hosted_settings,
    mcp_session,
    server_env,
    write_triage_source,
)

POSTGRES = POSTGRES_URL


async def create_episode(http: httpx.AsyncClient, server: LiveServer, tenant: str = "alice", **body) -> dict:
    response = await http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN, **body},
                               headers=server.headers(tenant))
    assert response.status_code == 201, response.text
    return response.json()


async def episode_status(http: httpx.AsyncClient, server: LiveServer, episode_id: str) -> dict:
    response = await http.get(f"{server.url}/v1/episodes/{episode_id}", headers=server.headers())
    assert response.status_code == 200, response.text
    return response.json()


@pytest.mark.parametrize("mode", [MODERN, LEGACY])
async def test_an_episode_over_http(tmp_path, mode):
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient() as http:
            created = await create_episode(http, server)
            assert created["mcp_url"] == f"{server.url}/v1/episodes/{created['episode_id']}/mcp"
            async with mcp_session(created["mcp_url"], created["token"], mode) as client:
                assert client.protocol_version == (MODERN_VERSION if mode == MODERN else "2025-11-25")
                tools = await client.list_tools()
                assert [tool.name for tool in tools.tools] == [
                    "list_patients", "get_patient", "set_priority", "submit_result"]
                result = await client.call_tool("set_priority", {"patient_id": "P1", "priority": 1})
                assert result.structured_content == {"ok": True, "patient_id": "P1", "priority": 1}
                submitted = await client.call_tool("submit_result", {"answer": "P1 is priority 1"})
                assert submitted.structured_content["status"] == "submitted"
                closed = await client.call_tool("list_patients", {})
                assert closed.is_error and closed.structured_content["error"]["type"] == "episode_closed"

            status = await episode_status(http, server, created["episode_id"])
    assert status["status"] == "submitted" and status["verdict"] is None
    assert status["step_count"] == 1 and status["steps"][0]["tool"] == "set_priority"
    assert status["final_answer"] == "P1 is priority 1"


async def test_a_judge_model_judges_after_submit(tmp_path):
    with LiveServer(hosted_settings(tmp_path, judge_model="scripted/deterministic-only")) as server:
        async with httpx.AsyncClient() as http:
            created = await create_episode(http, server)
            async with mcp_session(created["mcp_url"], created["token"]) as client:
                await client.call_tool("set_priority", {"patient_id": "P1", "priority": 1})
                await client.call_tool("submit_result", {"answer": "done"})
            status = await _wait_for_status(http, server, created["episode_id"], "judged")
    assert status["verdict"]["passed"] is True and status["verdict"]["score"] == 1.0
    assert status["verdict"]["items"][0]["id"] == "p1"


async def test_a_judgment_lost_with_its_process_resumes_when_the_service_starts(tmp_path):
    # The first service has no judge, as if it had been killed while judging: the episode stays submitted.
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient() as http:
            created = await create_episode(http, server)
            async with mcp_session(created["mcp_url"], created["token"]) as client:
                await client.call_tool("set_priority", {"patient_id": "P1", "priority": 1})
                await client.call_tool("submit_result", {"answer": "done"})
            assert (await episode_status(http, server, created["episode_id"]))["status"] == "submitted"
    # The next service on the same store judges it without being asked.
    with LiveServer(hosted_settings(tmp_path, judge_model="scripted/deterministic-only")) as server:
        async with httpx.AsyncClient() as http:
            status = await _wait_for_status(http, server, created["episode_id"], "judged")
    assert status["verdict"]["passed"] is True and status["verdict"]["items"][0]["id"] == "p1"


async def test_submit_over_rest_closes_the_episode_once(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient() as http:
            created = await create_episode(http, server, faults="E1", seed=3, mode="history")
            url = f"{server.url}/v1/episodes/{created['episode_id']}/submit"
            first = await http.post(url, json={"answer": "nothing to do"}, headers=server.headers())
            second = await http.post(url, json={"answer": "again"}, headers=server.headers())
    assert first.status_code == 200
    view = EpisodeView.model_validate(first.json())
    assert view.status == "submitted" and view.mode == "history"
    assert view.faults.mode == "E1" and view.faults.seed == 3
    assert second.status_code == 409 and "is closed" in second.json()["error"]


async def test_catalog_health_and_generated_openapi(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=server.headers()) as http:
            tasks = (await http.get("/v1/tasks")).json()["tasks"]
            scenarios = (await http.get("/v1/scenarios")).json()["scenarios"]
            health = (await http.get("/healthz", headers={})).json()
            document = (await http.get("/openapi.json", headers={})).json()
    assert [task["id"] for task in tasks] == [CHEST_PAIN, "triage-desk/short"]
    assert scenarios[0]["tools"] == ["list_patients", "get_patient", "set_priority"]
    assert health["status"] == "ok" and health["tasks"] == 2
    assert {"/v1/episodes", "/v1/episodes/{episode_id}", "/v1/episodes/{episode_id}/submit",
            "/v1/episodes/{episode_id}/mcp", "/v1/tasks", "/v1/scenarios", "/v1/judge", "/healthz"} <= set(
        document["paths"])
    create = document["paths"]["/v1/episodes"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/CreateEpisodeRequest")
    schemas = document["components"]["schemas"]
    assert schemas["CreateEpisodeRequest"]["properties"].keys() == CreateEpisodeRequest.model_fields.keys()
    assert {"EpisodeView", "Verdict", "JudgeRequest", "ErrorBody", "StepRecord"} <= schemas.keys()


async def test_the_judging_service_is_mounted(tmp_path):
    task = Task.model_validate(TRIAGE["tasks"][0])
    final = {"patients": [{"id": "P1", "name": "Ana Ruiz", "priority": 1}], "log": []}
    trajectory = EpisodeRecord(id="offline-1", task_id=CHEST_PAIN, scenario_id="triage-desk", state=final)
    body = {"task": task.model_dump(mode="json"), "trajectory": trajectory.model_dump(mode="json")}
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=server.headers()) as http:
            response = await http.post("/v1/judge", json=body)
    assert response.status_code == 200, response.text
    assert response.json()["passed"] is True and response.json()["episode_id"] == "offline-1"


async def test_bad_requests_are_answered_with_what_to_fix(tmp_path):
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(base_url=server.url, headers=server.headers()) as http:
            unknown = await http.post("/v1/episodes", json={"task_id": "triage-desk/chest-pains"})
            invalid = await http.post("/v1/episodes", json={"task_id": CHEST_PAIN, "faults": "E9", "seeds": 1})
            not_json = await http.post("/v1/episodes", content=b"{task_id:", headers={"content-type": "text/plain"})
    assert unknown.status_code == 404 and "Did you mean: triage-desk/chest-pain" in unknown.json()["error"]
    assert invalid.status_code == 422
    assert {error["field"] for error in invalid.json()["errors"]} == {"faults", "seeds"}
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]


async def test_idle_episodes_expire(tmp_path):
    settings = hosted_settings(tmp_path, episode_idle_seconds=0.2, expire_every_seconds=0.1)
    with LiveServer(settings) as server:
        async with httpx.AsyncClient() as http:
            created = await create_episode(http, server)
            await _wait_for_status(http, server, created["episode_id"], "expired")
            async with mcp_session(created["mcp_url"], created["token"]) as client:
                result = await client.call_tool("list_patients", {})
    assert result.is_error and "expired" in result.structured_content["error"]["message"]


async def _wait_for_status(http: httpx.AsyncClient, server: LiveServer, episode_id: str, wanted: str) -> dict:
    # Polls until the background work is done; the deadline only bounds a broken run.
    deadline = time.monotonic() + 60
    while True:
        status = await episode_status(http, server, episode_id)
        if status["status"] == wanted or time.monotonic() > deadline:
            assert status["status"] == wanted
            return status
        await asyncio.sleep(0.05)


async def test_shutdown_finishes_the_call_in_flight(tmp_path):
    """SIGTERM while a tool call is being simulated: the call completes and its step is stored."""
    source, db, marker, port = write_triage_source(tmp_path), tmp_path / "hosted.db", tmp_path / "called", free_port()
    env = server_env(tmp_path, OCCUSIM_API_KEYS=API_KEYS["alice"], OCCUSIM_TOKEN_SECRET=TOKEN_SECRET,
                     OCCUSIM_TEST_MODEL_DELAY="2", OCCUSIM_TEST_MODEL_MARKER=str(marker))
    process = await asyncio.create_subprocess_exec(
        PYTHON, "-m", "occusim", "serve", "--http", "--port", str(port), "--source", str(source), "--no-bundled",
        "--db", str(db), "--world-model", "scripted/triage-slow", "--log-level", "warning",
        env=env, stderr=asyncio.subprocess.PIPE,
    )
    url, headers = f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {API_KEYS['alice']}"}
    try:
        async with httpx.AsyncClient(base_url=url, headers=headers) as http:
            await _wait_until_up(http, process)
            created = (await http.post("/v1/episodes", json={"task_id": CHEST_PAIN})).json()
            async with mcp_session(created["mcp_url"], created["token"]) as client:
                await client.list_tools()  # the client validates results against the listed schemas
                call = asyncio.create_task(client.call_tool("set_priority", {"patient_id": "P1", "priority": 1}))
                while not marker.exists():
                    assert not call.done(), call
                    await asyncio.sleep(0.02)
                process.send_signal(signal.SIGTERM)
                result = await call
        assert not result.is_error and result.structured_content["priority"] == 1
        # After a graceful shutdown uvicorn re-raises the signal, so the exit status reports SIGTERM.
        assert await asyncio.wait_for(process.wait(), timeout=60) == -signal.SIGTERM
        assert process.stderr is not None and b"Traceback" not in await process.stderr.read()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    store = Store(db)
    await store.init()
    try:
        record = await store.load_episode(created["episode_id"])
    finally:
        await store.close()
    assert [step.tool for step in record.steps] == ["set_priority"]
    assert record.state["patients"][0]["priority"] == 1


async def _wait_until_up(http: httpx.AsyncClient, process: asyncio.subprocess.Process) -> None:
    while True:
        assert process.returncode is None, "the server exited before answering /healthz"
        try:
            if (await http.get("/healthz")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        await asyncio.sleep(0.1)


@pytest.mark.postgres
async def test_processes_sharing_postgres_serve_any_episode(tmp_path):
    schema = f"mcp_{uuid.uuid4().hex[:10]}"
    settings = hosted_settings(tmp_path, db=POSTGRES, db_schema=schema)
    try:
        with LiveServer(settings) as first, LiveServer(settings) as second:
            async with httpx.AsyncClient() as http:
                created = await create_episode(http, first)
                on_second = created["mcp_url"].replace(first.url, second.url)
                async with mcp_session(on_second, created["token"]) as client:
                    result = await client.call_tool("set_priority", {"patient_id": "P1", "priority": 1})
                    assert not result.is_error
                # The first process still caches the episode as it was created; it catches up from the store.
                async with mcp_session(created["mcp_url"], created["token"]) as client:
                    listed = await client.call_tool("list_patients", {})
                    assert listed.structured_content["patients"][0]["priority"] == 1
                async with mcp_session(on_second, created["token"], LEGACY) as client:
                    await client.call_tool("submit_result", {"answer": "done"})
                status = await episode_status(http, first, created["episode_id"])
        assert status["status"] == "submitted"
        assert [step["index"] for step in status["steps"]] == [0, 1]
    finally:
        await drop_schema(schema)


def test_http_refuses_no_auth_beyond_loopback(capsys, monkeypatch):
    monkeypatch.delenv("OCCUSIM_API_KEYS", raising=False)
    assert main(["serve", "--http", "--no-auth", "--host", "0.0.0.0", "--no-bundled"]) == 2
    assert "--no-auth is only allowed on a loopback host" in capsys.readouterr().err
    assert main(["serve", "--http", "--no-bundled"]) == 2
    assert "no API keys configured" in capsys.readouterr().err


def test_stdio_options_are_refused_with_http(capsys):
    assert main(["serve", "--http", "--faults", "E2"]) == 2
    assert "--faults apply to a stdio episode" in capsys.readouterr().err


def test_config_file_settings(tmp_path):
    from occusim.service._config import ConfigError, load_settings

    config = tmp_path / "service.toml"
    config.write_text('port = 9001\napi_keys = ["k-one-0123456789"]\nmax-body-bytes = 2048\n')
    settings = load_settings(config, overrides={"port": None},
                             environ={"OCCUSIM_API_KEYS": "carol=k-two-0123456789"})
    assert settings.port == 9001 and settings.max_body_bytes == 2048
    assert sorted(settings.api_keys.values()) == ["k-one-0123456789", "k-two-0123456789"]
    assert "carol" in settings.api_keys
    yaml_config = tmp_path / "service.yaml"
    yaml_config.write_text("prot: 80\n")
    with pytest.raises(ConfigError, match="service.yaml: prot: Extra inputs are not permitted"):
        load_settings(yaml_config, environ={})


async def test_an_episode_slow_to_open_does_not_hold_up_the_others(tmp_path, monkeypatch):
    """Endpoints open side by side: one waiting on its store read leaves every other episode served."""
    release = threading.Event()
    slow: list[str] = []
    opened = EpisodeService.open

    async def open_slowly(self, episode_id, *args, **kwargs):
        if episode_id in slow:  # the server's loop runs in a thread of its own: wait there for the release
            await asyncio.to_thread(release.wait, 30)
        return await opened(self, episode_id, *args, **kwargs)

    monkeypatch.setattr(EpisodeService, "open", open_slowly)
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}}}}

    def request(episode: dict) -> dict:
        return {"json": listing, "headers": {
            "Authorization": f"Bearer {episode['token']}", "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": MODERN_VERSION, "Mcp-Method": "tools/list"}}

    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(timeout=60) as http:
            first, second = await create_episode(http, server), await create_episode(http, server)
            slow.append(first["episode_id"])
            waiting = asyncio.create_task(http.post(first["mcp_url"], **request(first)))
            await asyncio.sleep(0.3)  # the first episode's endpoint is opening now
            served = await asyncio.wait_for(http.post(second["mcp_url"], **request(second)), timeout=10)
            assert served.status_code == 200 and not waiting.done()
            release.set()
            assert (await asyncio.wait_for(waiting, timeout=30)).status_code == 200
