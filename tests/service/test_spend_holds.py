"""Model spend held before each call and counted after: parallel tool calls and `POST /v1/judge` requests
of one tenant cannot together pass its daily cap, and judge requests count against its per-minute limit."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx

from occusim.environments import EpisodeRecord, Task
from occusim.rest import ErrorBody
from occusim.service import TenantUsage
from tests.helpers import (
    API_KEYS,
    CHEST_PAIN,
    STUB_KEY,
    TRIAGE,
    LiveServer,
    ProviderStub,
    RawSession,
    Reply,
    completion_body,
    hosted_settings,
    simulate_triage,
    tracked_call,
)

LATEST_HANDSHAKE = "2025-11-25"
ALICE = {"Authorization": f"Bearer {API_KEYS['alice']}"}


def _priced(body: dict[str, Any]) -> Reply:
    """An OpenAI-compatible answer priced at 100k prompt tokens of gpt-4o-mini (about $0.015)."""
    prompt = next(message["content"] for message in body["messages"] if message["role"] == "user")
    tracked = tracked_call(prompt)
    if tracked is not None:
        content = json.dumps(simulate_triage(*tracked))
    else:  # a judge vote: every check it presents passes
        schema = body["response_format"]["json_schema"]["schema"]
        ids = schema["properties"]["verdicts"]["required"]
        content = json.dumps({"verdicts": {i: {"reason": "ok", "evidence_steps": [], "passed": True} for i in ids}})
    answer = completion_body(content)
    answer["model"] = "gpt-4o-mini"
    answer["usage"] = {"prompt_tokens": 100_000, "completion_tokens": 10, "total_tokens": 100_010}
    return Reply(answer)


async def _usage(http: httpx.AsyncClient, url: str) -> TenantUsage:
    response = await http.get(f"{url}/v1/usage", headers=ALICE)
    assert response.status_code == 200, response.text
    return TenantUsage.model_validate(response.json())


async def test_parallel_tool_calls_cannot_pass_the_daily_cap_together(tmp_path, monkeypatch):
    with ProviderStub(lambda number, body, key: _priced(body), latency=0.5).running() as stub:
        monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_BASE", stub.url)
        monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_KEY", STUB_KEY)
        settings = hosted_settings(tmp_path, world_model="openai/gpt-4o-mini", limits={"cost_per_day_usd": 0.02})
        with LiveServer(settings) as server:
            async with httpx.AsyncClient(timeout=60) as http:
                sessions = []
                for _ in range(12):
                    created = await http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=ALICE)
                    session = RawSession(http, [server.url], created.json())
                    assert (await session.open(0, LATEST_HANDSHAKE)).status_code == 200
                    sessions.append(session)
                calls = await asyncio.gather(*(s.call(0, "get_patient", {"patient_id": "P2"}, id=2) for s in sessions))
                results = [call.json()["result"] for call in calls]
                ran = [r for r in results if not r["isError"]]
                refused = [r for r in results if r["isError"]]
                assert len(ran) == 1 and len(refused) == 11, results
                assert all("holds $" in r["content"][0]["text"] and "in flight" in r["content"][0]["text"]
                           for r in refused), refused
                spent = (await _usage(http, server.url)).cost_today_usd
                # Once the cost of a call is known, calls in flight hold that much each.
                again = await asyncio.gather(*(s.call(0, "get_patient", {"patient_id": "P2"}, id=20) for s in sessions))
                spent_after = (await _usage(http, server.url)).cost_today_usd
    assert 0.01 < spent < 0.02, "one call ran"
    assert sum(not r.json()["result"]["isError"] for r in again) == 1, "one more call fits under the cap, alone"
    assert spent_after < 0.02 + spent, "at most one call's cost past the cap"
    assert len(stub.requests) == 2


def _judge_body(votes: int, seed: int) -> dict[str, Any]:
    task = Task.model_validate(TRIAGE["tasks"][0]).model_dump(mode="json")
    task["rubric"]["items"].append({"id": "tone", "kind": "llm", "description": "", "checks": ["The answer is polite."]})
    final = {"patients": [{"id": "P1", "name": "Ana Ruiz", "priority": 1}], "log": []}
    trajectory = EpisodeRecord(id="offline-1", task_id=CHEST_PAIN, scenario_id="triage-desk", state=final,
                               final_answer="done, thank you")
    # A seed of its own per request: a cached judgment would cost nothing.
    return {"task": task, "trajectory": trajectory.model_dump(mode="json"), "votes": votes, "seed": seed}


async def test_judge_requests_count_against_the_minute_limit_and_the_daily_cap(tmp_path, monkeypatch):
    with ProviderStub(lambda number, body, key: _priced(body), latency=0.3).running() as stub:
        monkeypatch.setenv("OCCUSIM_JUDGE_API_BASE", stub.url)
        monkeypatch.setenv("OCCUSIM_JUDGE_API_KEY", STUB_KEY)
        settings = hosted_settings(tmp_path, judge_model="openai/gpt-4o-mini",
                                   tenant_limits={"alice": {"tool_calls_per_minute": 4, "cost_per_day_usd": 0.02}})
        with LiveServer(settings) as server:
            async with httpx.AsyncClient(timeout=60) as http:
                too_many = await http.post(f"{server.url}/v1/judge", json=_judge_body(votes=5, seed=0), headers=ALICE)
                assert too_many.status_code == 429, too_many.text
                assert ErrorBody.model_validate(too_many.json()).type == "tool_call_rate_limit"
                assert stub.requests == [], "refused before any model call"

                judged = await asyncio.gather(*(
                    http.post(f"{server.url}/v1/judge", json=_judge_body(votes=1, seed=n), headers=ALICE)
                    for n in range(1, 4)))
                statuses = sorted(response.status_code for response in judged)
                usage = await _usage(http, server.url)
                alone = await http.post(f"{server.url}/v1/judge", json=_judge_body(votes=1, seed=4), headers=ALICE)
                past_cap = await http.post(f"{server.url}/v1/judge", json=_judge_body(votes=1, seed=5), headers=ALICE)
                final = await _usage(http, server.url)
                document = (await http.get(f"{server.url}/openapi.json")).json()
    assert {"429", "503"} <= document["paths"]["/v1/judge"]["post"]["responses"].keys()
    assert statuses == [200, 429, 429], [r.text for r in judged]
    refusal = ErrorBody.model_validate(next(r for r in judged if r.status_code == 429).json())
    assert refusal.type == "daily_cost_limit" and "in flight" in refusal.error
    assert 0.01 < usage.cost_today_usd < 0.02 and usage.tool_calls_this_minute == 1, usage
    assert alone.status_code == 200, "alone and under the cap, a request may start"
    assert past_cap.status_code == 429 and ErrorBody.model_validate(past_cap.json()).type == "daily_cost_limit"
    assert final.tool_calls_this_minute == 2 and final.cost_today_usd > 0.02
    assert len(stub.requests) == 2
