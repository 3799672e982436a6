"""`occusim serve --openenv` as a process: OpenEnv's HTTP routes and WebSocket sessions playing real episodes,
rewards equal to the stored verdicts."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect

from occusim.server import Store
from tests.helpers import CHEST_PAIN, PYTHON, openenv_served, server_env, write_triage_source

JUDGE = "scripted/deterministic-only"


@pytest.fixture
def openenv_server(tmp_path):
    """A served triage source (world model scripted/triage, the deterministic judge); yields its base URL."""
    with openenv_served(tmp_path, JUDGE) as base:
        yield base


async def exchange(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(message))
    answer: dict[str, Any] = json.loads(await ws.recv())
    return answer


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": arguments}}


async def play(base: str, priority: int, reset: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One episode over /ws: reset, set P1's priority, submit, state; every answer's data."""
    async with connect(base.replace("http", "ws") + "/ws") as ws:
        frames = [
            {"type": "reset", "data": reset or {}},
            call("set_priority", patient_id="P1", priority=priority),
            call("submit_result", answer=f"P1 is priority {priority}"),
            {"type": "state"},
        ]
        answers = [await exchange(ws, frame) for frame in frames]
    assert [answer["type"] for answer in answers] == ["observation"] * 3 + ["state"], answers
    return [answer["data"] for answer in answers]


async def stored_verdict(folder: Path, episode_id: str) -> Any:
    async with Store(folder / "episodes.db") as store:
        return await store.load_judgment(episode_id)


async def test_an_episode_over_the_websocket_is_rewarded_with_its_verdict(openenv_server, tmp_path):
    reset, called, submitted, state = await play(openenv_server, priority=1)

    observation = reset["observation"]
    assert observation["task_id"] == CHEST_PAIN, "an empty reset takes the first task served"
    assert [tool["name"] for tool in observation["tools"]] == [
        "list_patients",
        "get_patient",
        "set_priority",
        "submit_result",
    ]
    assert "chest pain priority 1" in observation["prompt"]
    assert (reset["done"], reset["reward"]) == (False, None)
    assert json.loads(called["observation"]["result"]) == {"ok": True, "patient_id": "P1", "priority": 1}
    assert (called["observation"]["is_error"], called["done"], called["reward"]) == (False, False, None)
    verdict = await stored_verdict(tmp_path, observation["episode_id"])
    assert submitted["done"] is True and submitted["reward"] == verdict.score == 1.0
    assert submitted["observation"]["metadata"]["verdict"]["passed"] is True
    assert state == {
        "episode_id": observation["episode_id"],
        "step_count": 1,
        "task_id": CHEST_PAIN,
        "faults": "E0",
        "seed": 0,
        "status": "judged",
        "reward": 1.0,
    }


async def test_concurrent_sessions_play_their_own_episodes(openenv_server, tmp_path):
    # Half the rollouts get it wrong: each reward is its own episode's verdict.
    priorities = [1, 3] * 4
    episodes = await asyncio.gather(*(play(openenv_server, priority) for priority in priorities))

    ids = [reset["observation"]["episode_id"] for reset, *_ in episodes]
    assert len(set(ids)) == len(priorities)
    for (reset, _, submitted, state), priority in zip(episodes, priorities, strict=True):
        verdict = await stored_verdict(tmp_path, reset["observation"]["episode_id"])
        assert submitted["reward"] == verdict.score == (1.0 if priority == 1 else 0.0)
        assert state["step_count"] == 1


@pytest.fixture
def impatient_server(tmp_path):
    """The same server, expiring episodes left a second without a step."""
    with openenv_served(tmp_path, JUDGE, "--episode-idle-seconds", "1") as base:
        yield base


async def test_an_episode_left_without_a_step_expires_and_its_session_is_told(impatient_server, tmp_path):
    async with connect(impatient_server.replace("http", "ws") + "/ws") as ws:
        reset = await exchange(ws, {"type": "reset", "data": {}})
        episode_id = reset["data"]["observation"]["episode_id"]
        await exchange(ws, call("set_priority", patient_id="P1", priority=1))
        async with Store(tmp_path / "episodes.db") as store:
            for _ in range(40):  # checked every quarter of the idle time
                await asyncio.sleep(0.25)
                if (await store.load_episode(episode_id)).status == "expired":
                    break
            assert (await store.load_episode(episode_id)).status == "expired"
        late = await exchange(ws, call("set_priority", patient_id="P1", priority=2))
    assert late["type"] == "error" or late["data"]["observation"]["is_error"], late
    assert "expired" in json.dumps(late)


async def test_a_reset_chooses_the_task_the_faults_and_the_seed(openenv_server):
    reset, called, _, state = await play(
        openenv_server, 1, {"task_id": CHEST_PAIN, "faults": "E1", "seed": 7}
    )

    assert (state["faults"], state["seed"]) == ("E1", 7)
    assert reset["observation"]["task_id"] == CHEST_PAIN


async def test_misuse_of_a_session_gets_openenv_error_frames(openenv_server):
    async with connect(openenv_server.replace("http", "ws") + "/ws") as ws:
        early = await exchange(ws, call("list_patients"))
        listed = await exchange(ws, {"type": "step", "data": {"type": "list_tools"}})
        unknown_task = await exchange(ws, {"type": "reset", "data": {"task_id": "nope/none"}})
        bad_field = await exchange(ws, {"type": "reset", "data": {"fault": "E9"}})
        unknown_type = await exchange(ws, {"type": "render"})
        await ws.send("{not json")
        not_json = json.loads(await ws.recv())
        await exchange(ws, {"type": "reset", "data": {}})
        bad_action = await exchange(ws, {"type": "step", "data": {"type": "call_tool"}})
        unknown_tool = await exchange(ws, call("teleport"))
        await ws.send(json.dumps({"type": "close"}))

    assert early["type"] == "error" and "send a reset first" in early["data"]["message"]
    assert [tool["name"] for tool in listed["data"]["observation"]["tools"]][-1] == "submit_result"
    assert (
        unknown_task["data"]["code"] == "EXECUTION_ERROR" and "nope/none" in unknown_task["data"]["message"]
    )
    assert bad_field["data"]["code"] == "VALIDATION_ERROR" and "fault" in bad_field["data"]["message"]
    assert unknown_type["data"]["code"] == "UNKNOWN_TYPE"
    assert not_json["data"]["code"] == "INVALID_JSON"
    assert bad_action["data"]["code"] == "VALIDATION_ERROR" and "tool_name" in bad_action["data"]["message"]
    assert unknown_tool["type"] == "observation" and unknown_tool["data"]["observation"]["is_error"] is True
    assert "teleport" in unknown_tool["data"]["observation"]["result"]


def test_the_http_routes_are_openenvs_and_stateless(openenv_server):
    with httpx.Client(base_url=openenv_server) as http:
        assert http.get("/health").json() == {"status": "healthy"}
        schema = http.get("/schema").json()
        assert set(schema) == {"action", "observation", "reset_observation", "state"}
        assert {"call_tool", "list_tools"} <= set(json.dumps(schema["action"]).split('"'))
        assert http.get("/state").json()["episode_id"] is None
        reset = http.post("/reset", json={"task_id": "triage-desk/short"})
        empty = http.post("/reset")
        listed = http.post("/step", json={"action": {"type": "list_tools"}})
        stateless_call = http.post(
            "/step", json={"action": {"type": "call_tool", "tool_name": "list_patients"}}
        )
        unknown = http.post("/reset", json={"task_id": "nope/none"})

    assert reset.status_code == 200 and reset.json()["observation"]["task_id"] == "triage-desk/short"
    assert reset.json()["observation"]["episode_id"] is None, "over HTTP nothing outlives the request"
    assert empty.json()["observation"]["task_id"] == CHEST_PAIN
    assert [tool["name"] for tool in listed.json()["observation"]["tools"]][0] == "list_patients"
    assert stateless_call.status_code == 409 and "/ws" in stateless_call.json()["error"]
    assert unknown.status_code == 404 and "nope/none" in unknown.json()["error"]


def test_openenv_refuses_what_it_cannot_honour(tmp_path):
    source = write_triage_source(tmp_path)
    for extra, expected in [
        (["--host", "0.0.0.0"], "loopback"),
        (["--http"], "not both"),
        (["--no-auth"], "need --http"),
        (["--episode-id", "x"], "each reset chooses"),
        (["--max-concurrent-calls", "0"], "at least 1"),
    ]:
        done = subprocess.run(
            [PYTHON, "-m", "occusim", "serve", "--openenv", "--source", str(source), "--no-bundled", *extra],
            env=server_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and expected in done.stderr, (extra, done.stderr)
