"""A failing, malformed or hanging world-model provider, reached over loopback HTTP through litellm: the
agent gets `simulator_unavailable` with a sanitised message, the store keeps the same, the operator's log
the provider's text with secrets redacted, and one deadline bounds the whole call."""

from __future__ import annotations

import logging

import pytest

from occusim.server import EpisodeService
from tests.helpers import CHEST_PAIN, HANG, STUB_KEY, Reply, completion_body, provider_stub, triage_catalog


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch):
    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "2")


async def _episode(store, model, **options):
    return await EpisodeService(triage_catalog(), store, world_model=model, **options).create(CHEST_PAIN)


async def test_an_empty_choice_list_is_an_outage_not_the_agents_failure(sqlite_store):
    with provider_stub(Reply({"choices": []})) as stub:
        episode = await _episode(sqlite_store, stub.model)
        outcome = await episode.step("list_patients", {})

    assert len(stub.requests) == 2  # retried
    assert outcome.is_error
    error = outcome.observation["error"]
    assert error["type"] == "simulator_unavailable"
    assert "ProviderAnswerError" in error["message"]
    stored = await sqlite_store.load_episode(episode.id)
    assert [step.observation for step in stored.steps] == [outcome.observation]
    assert stored.state == stored.initial_state


async def test_a_provider_cut_off_before_any_content_is_an_outage(sqlite_store):
    with provider_stub(Reply(completion_body(None, finish_reason="length"))) as stub:
        episode = await _episode(sqlite_store, stub.model)
        outcome = await episode.step("list_patients", {})

    assert outcome.observation["error"]["type"] == "simulator_unavailable"


async def test_the_providers_text_reaches_the_operator_redacted_and_never_the_agent(sqlite_store, caplog):
    text = f"Incorrect API key provided: Bearer {STUB_KEY}. You can find your API key at https://example/keys."
    body = {"error": {"message": text, "type": "invalid_request_error", "code": "invalid_api_key"}}
    with provider_stub(Reply(body, status=401)) as stub, caplog.at_level(logging.WARNING, "occusim.server"):
        episode = await _episode(sqlite_store, stub.model)
        outcome = await episode.step("list_patients", {})

    message = outcome.observation["error"]["message"]
    assert "HTTP 401 AuthenticationError" in message
    assert "Incorrect API key" not in message and "Bearer" not in message and STUB_KEY not in message
    stored = (await sqlite_store.load_episode(episode.id)).steps[0]
    assert stored.error == message and stored.observation == outcome.observation
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Incorrect API key provided: Bearer [redacted]" in logged
    assert STUB_KEY not in logged


async def test_a_hanging_provider_is_cut_off_by_the_call_deadline(sqlite_store):
    with provider_stub(HANG) as stub:
        episode = await _episode(sqlite_store, stub.model, call_deadline=0.5)
        outcome = await episode.step("list_patients", {})
        # The episode goes on: the next call meets the same deadline, not a stuck lock.
        again = await episode.step("list_patients", {})

    assert len(stub.requests) == 2  # one per call: the deadline ended the first request, not a retry
    for result in (outcome, again):
        assert result.observation["error"]["type"] == "simulator_unavailable"
        assert "did not answer within 0.5 s" in result.observation["error"]["message"]
    assert len((await sqlite_store.load_episode(episode.id)).steps) == 2
