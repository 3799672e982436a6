"""Three steps of a task simulated by the real local model (llama.cpp, on the gateway's lean path and through
litellm), not a script."""

from __future__ import annotations

import pytest

from occusim.environments import Catalog, Scenario, apply_json_patch
from occusim.llm import default_cache, set_default_cache
from occusim.server import EpisodeService

BED = {"type": "object", "properties": {"bed": {"type": "integer"}, "status": {"type": "string"}},
       "required": ["bed", "status"]}

# Deliberately tiny, so a 270M model on two CPU threads answers in seconds.
BED_BOARD = {
    "id": "bed-board",
    "name": "Ward Bed Board",
    "category": "Healthcare & Life Sciences",
    "domain": "Hospital operations",
    "occupation": "Charge nurse",
    "summary": "Track which beds are free.",
    "rules": "A bed is free or occupied. Assigning a free bed makes it occupied.",
    "tools": [
        {"name": "get_bed", "description": "Read one bed.",
         "input_schema": {"type": "object", "properties": {"bed": {"type": "integer"}}, "required": ["bed"]},
         "output_schema": BED},
        {"name": "assign_bed", "description": "Put a patient in a free bed.",
         "input_schema": {"type": "object", "properties": {"bed": {"type": "integer"}}, "required": ["bed"]},
         "output_schema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}},
    ],
    "state_descriptions": {"beds": "Each bed and its status."},
    "initial_state": {"beds": [{"bed": 1, "status": "free"}, {"bed": 2, "status": "occupied"}]},
    "tasks": [{"id": "bed-board/admit", "title": "Admit", "instruction": "Put the patient in bed 1.",
               "difficulty": 1, "verification_plan": "Bed 1 is occupied."}],
}


@pytest.fixture
def uncached():
    previous = default_cache()
    set_default_cache(None)
    yield
    set_default_cache(previous)


@pytest.mark.local_model
@pytest.mark.parametrize("lean", ["1", "0"], ids=["lean path", "through litellm"])
async def test_the_local_model_simulates_three_steps(sqlite_store, uncached, local_model, monkeypatch, lean):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    catalog = Catalog()
    assert not catalog.add(Scenario.model_validate(BED_BOARD), "test")
    # A loaded CI machine reads a prompt slowly: give each call time enough that it is answered, not timed out.
    service = EpisodeService(catalog, sqlite_store, world_model=local_model, max_repairs=0, call_deadline=600)
    # A small cap keeps the run short; a cut-off answer simply counts as invalid.
    service.world_model().max_tokens = 96
    episode = await service.create("bed-board/admit")

    records = []
    for tool, arguments in [("get_bed", {"bed": 1}), ("assign_bed", {"bed": 1}), ("get_bed", {"bed": 2})]:
        state_before = episode.state
        outcome = await episode.step(tool, arguments)
        record = outcome.record
        records.append(record)
        assert record.usage.calls == 1 and record.usage.prompt_tokens > 0
        assert isinstance(outcome.observation, dict)
        if record.error is not None:
            # A failure must come back as a clear simulator error with the state untouched.
            assert outcome.is_error
            assert outcome.observation["error"]["type"] == "simulator_error"
            assert "the call had no effect" in outcome.observation["error"]["message"]
            assert episode.state == state_before
        else:
            assert episode.state == apply_json_patch(state_before, record.state_patch)

    # The second prompt repeats the first up to the end of the state (the first call only read), and llama.cpp
    # reads only the rest again.
    second = records[1].usage
    assert second.prompt_tokens_reused >= second.prompt_tokens // 2, second
    assert episode.record.world_model == "local"
    stored = await sqlite_store.load_episode(episode.id)
    assert len(stored.steps) == 3 and stored.state == episode.state
