"""The OpenEnv adapter as a rollout service: a group of rollouts of one task shares its seed and the world
model's answers to identical requests, and a reset reloads no catalog."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from websockets.asyncio.client import connect

import occusim.environments
from occusim.environments import Catalog
from occusim.server import EpisodeService, Store
from occusim.service import EpisodeDefaults, create_openenv_app
from tests.helpers import (
    CHEST_PAIN,
    ProviderStub,
    Reply,
    TriageModel,
    completion_body,
    free_port,
    triage_catalog,
)


def triage_answer(number: int, body: dict[str, Any], key: str) -> Reply:
    """The triage scenario simulated correctly, as an OpenAI-compatible provider answers (not a scripted model:
    those skip the response cache)."""
    return Reply(completion_body(TriageModel()(body["messages"], body)))


@pytest.fixture
def provider() -> Iterator[ProviderStub]:
    with ProviderStub(triage_answer, latency=0.3).running() as stub:
        yield stub


@pytest.fixture
def service(tmp_path, provider) -> EpisodeService:
    return EpisodeService(triage_catalog(), Store(tmp_path / "episodes.db"), world_model=provider.model)


@pytest.fixture
def served(service) -> Iterator[str]:
    """The OpenEnv app on the triage catalog in a uvicorn thread; yields its WebSocket URL."""
    app = create_openenv_app(service, EpisodeDefaults(task_id=CHEST_PAIN))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    yield f"ws://127.0.0.1:{server.config.port}/ws"
    server.should_exit = True
    thread.join(timeout=30)


async def rollout(
    url: str, reset: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]
) -> list[dict[str, Any]]:
    """Reset, the calls, then the state: every answer's data."""
    async with connect(url) as ws:
        frames = [{"type": "reset", "data": reset}]
        frames += [
            {"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": arguments}}
            for tool, arguments in calls
        ]
        answers = []
        for frame in [*frames, {"type": "state"}]:
            await ws.send(json.dumps(frame))
            answer = json.loads(await ws.recv())
            assert answer["type"] in ("observation", "state"), answer
            answers.append(answer["data"])
    return answers


async def test_a_group_shares_its_seed_and_the_world_models_answers(served, provider):
    # Four rollouts of one task at once, differing only in their second call (the policy's choice).
    group = [
        [("list_patients", {}), ("set_priority", {"patient_id": "P1", "priority": priority})]
        for priority in (1, 1, 2, 3)
    ]

    played = await asyncio.gather(*(rollout(served, {"task_id": CHEST_PAIN}, calls) for calls in group))

    assert {answers[-1]["seed"] for answers in played} == {0}
    listed = {answers[1]["observation"]["result"] for answers in played}
    assert len(listed) == 1, "identical requests get one identical answer"
    # One world-model request for the shared first call, one per distinct second call.
    assert len(provider.requests) == 1 + 3

    await rollout(served, {"task_id": CHEST_PAIN, "seed": 5}, group[0])
    assert len(provider.requests) == 4 + 2, "another seed is another group: its own requests"


async def test_a_reset_reloads_no_catalog(served, monkeypatch):
    def reload(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a reset reloaded the catalog")

    monkeypatch.setattr(occusim.environments, "load_catalog", reload)
    monkeypatch.setattr(Catalog, "add", reload)

    answers = await asyncio.gather(*(rollout(served, {}, []) for _ in range(3)))

    assert len({reset["observation"]["episode_id"] for reset, _ in answers}) == 3


async def test_rollouts_left_unsubmitted_are_not_held_in_memory(served, service, tmp_path):
    # A reset that leaves an episode unsubmitted, then a connection that ends without submitting.
    async with connect(served) as ws:
        for _ in range(2):
            await ws.send(json.dumps({"type": "reset", "data": {}}))
            first = json.loads(await ws.recv())
    await rollout(served, {}, [("list_patients", {})])

    assert service.open_episodes == {}
    async with Store(tmp_path / "episodes.db") as store:
        stored = await store.list_episodes()
    assert len(stored) == 3 and {summary.status for summary in stored} == {"open"}
    assert first["data"]["observation"]["episode_id"] in {summary.id for summary in stored}
