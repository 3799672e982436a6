"""A tool call whose caller gives up (cancelled, or an MCP client's timeout) still runs to its end and is
recorded; the retried call runs after it, against the state it left, as the next step."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from mcp import Client

from occusim.server import Simulation, WorldModel, build_mcp_server
from tests.helpers import TriageModel, start_episode


class GatedWorldModel(WorldModel):
    """The triage world model, held at each call until the test opens the gate."""

    def __init__(self, model: TriageModel) -> None:
        super().__init__(model.model)
        self.started = asyncio.Event()
        self.gate = asyncio.Event()

    async def simulate(self, *args: Any, **kwargs: Any) -> Simulation:
        self.started.set()
        await self.gate.wait()
        return await super().simulate(*args, **kwargs)


async def test_a_cancelled_step_is_committed_and_the_retry_is_the_next_step(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)
    episode.world_model = gated = GatedWorldModel(model)

    first = asyncio.create_task(episode.step("set_priority", {"patient_id": "P1", "priority": 2}))
    await gated.started.wait()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    retry = asyncio.create_task(episode.step("set_priority", {"patient_id": "P1", "priority": 2}))
    gated.gate.set()
    outcome = await retry

    assert outcome.record.index == 1 and model.calls == 2
    stored = await sqlite_store.load_episode(episode.id)
    assert [step.index for step in stored.steps] == [0, 1]
    assert stored.state["log"] == ["P1->2", "P1->2"]


async def test_an_mcp_client_timeout_leaves_the_call_recorded(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)
    episode.world_model = gated = GatedWorldModel(model)

    async with Client(build_mcp_server(episode)) as client:
        with pytest.raises(Exception, match="[Tt]imed out|[Tt]imeout"):
            await client.call_tool("get_patient", {"patient_id": "P1"}, read_timeout_seconds=0.2)
        gated.gate.set()
        retried = await client.call_tool("get_patient", {"patient_id": "P2"})

    assert retried.structured_content["id"] == "P2"
    stored = await sqlite_store.load_episode(episode.id)
    assert [(step.index, step.arguments) for step in stored.steps] == [
        (0, {"patient_id": "P1"}), (1, {"patient_id": "P2"})]
