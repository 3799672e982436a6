"""The native protocol behind the seam: the modes it simulates, what it refuses, and its brief and schemas."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from occusim.environments import EpisodeRecord, FaultSettings
from occusim.server import NATIVE, EpisodeError, EpisodeService, Store, build_mcp_server
from tests.helpers import CHEST_PAIN, TriageModel, triage_catalog


async def test_a_native_service_refuses_an_episode_in_another_protocols_mode(sqlite_store: Store) -> None:
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=TriageModel().model)
    assert service.default_mode == "tracked"
    with pytest.raises(EpisodeError, match="--protocol occubench"):
        await service.create(CHEST_PAIN, mode="occubench")
    assert await sqlite_store.list_episodes() == []


async def test_a_stored_episode_of_another_protocol_is_not_simulated_natively(sqlite_store: Store) -> None:
    catalog = triage_catalog()
    task = catalog.task(CHEST_PAIN)
    state = catalog.initial_state(task)
    record = EpisodeRecord(id="elsewhere", task_id=task.id, scenario_id=catalog.scenario_of(task).id,
                           world_model="scripted/triage", mode="occubench", faults=FaultSettings(),
                           initial_state=state, state=state, created_at=datetime.now(UTC))
    await sqlite_store.create_episode(record)
    service = EpisodeService(catalog, sqlite_store, world_model=TriageModel().model)
    episode = await service.open("elsewhere")
    with pytest.raises(EpisodeError, match="uses the occubench mode"):
        await episode.step("list_patients", {})
    assert (await sqlite_store.load_episode("elsewhere")).steps == []


async def test_native_episodes_advertise_output_schemas_and_the_native_brief(sqlite_store: Store) -> None:
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=TriageModel().model)
    episode = await service.create(CHEST_PAIN, mode="history")
    assert episode.protocol is NATIVE and episode.record.mode == "history"
    assert NATIVE.advertises_output_schemas(episode)
    brief = NATIVE.brief(episode)
    assert episode.task.instruction.strip() in brief and f"at most {episode.task.max_steps} tool calls" in brief
    server = build_mcp_server(episode)
    assert server.instructions == brief
    assert NATIVE.serve_arguments("history") == ["--mode", "history"]
