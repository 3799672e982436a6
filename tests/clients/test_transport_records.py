"""An in-process transport hands the runner the closed episode's record from memory: it must be the record the
store holds, faults, final state and all, and only a closed episode's, once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from occusim.clients import LLMAgent
from occusim.clients._transports import InProcessTransport
from occusim.environments import FaultSettings, load_catalog
from occusim.server import Store
from tests.helpers import TASK_A, TASK_B, ReplayWorld, ScriptedAgent

CATALOG = load_catalog([])


@pytest.fixture
async def store(tmp_path: Path):
    async with Store(tmp_path / "episodes.db") as opened:
        yield opened


@pytest.mark.parametrize(("task_id", "mode"), [(TASK_B, "E0"), (TASK_A, "E3")])
async def test_the_closed_record_is_the_stored_one(store: Store, task_id: str, mode: str):
    transport = InProcessTransport(CATALOG, store, world_model=ReplayWorld(CATALOG).model)
    agent = LLMAgent(ScriptedAgent(lambda task, seed: "replay", CATALOG).model)
    faults = FaultSettings(mode=mode, seed=3)

    async with transport.episode(CATALOG.task(task_id), faults, uuid.uuid4().hex) as (client, episode_id):
        run = await agent.run(client, occupation=CATALOG.scenario_of(CATALOG.task(task_id)).occupation, seed=1)

    assert run.ended == "submitted"
    held = transport.closed_record(episode_id)
    assert held is not None and held.steps
    assert held == await store.load_episode(episode_id)
    assert transport.closed_record(episode_id) is None  # handed over once


async def test_an_episode_left_open_is_read_from_the_store(store: Store):
    transport = InProcessTransport(CATALOG, store, world_model=ReplayWorld(CATALOG).model)

    async with transport.episode(CATALOG.task(TASK_B), FaultSettings(), uuid.uuid4().hex) as (client, episode_id):
        tools = await client.list_tools()

    assert tools.tools
    assert transport.closed_record(episode_id) is None
    assert (await store.load_episode(episode_id)).status == "open"


async def test_a_runner_that_fails_inside_leaves_no_record_behind(store: Store):
    transport = InProcessTransport(CATALOG, store, world_model=ReplayWorld(CATALOG).model)
    agent = LLMAgent(ScriptedAgent(lambda task, seed: "replay", CATALOG).model)

    with pytest.raises(RuntimeError, match="after the answer"):
        async with transport.episode(CATALOG.task(TASK_B), FaultSettings(), uuid.uuid4().hex) as (client, episode_id):
            await agent.run(client, occupation=CATALOG.scenario_of(CATALOG.task(TASK_B)).occupation, seed=1)
            raise RuntimeError("after the answer")

    assert (await store.load_episode(episode_id)).status == "submitted"
    assert transport.closed_record(episode_id) is None
