"""The offline backend: a real llama.cpp server on loopback, reached through complete() on both paths: the lean
aiohttp one (the default) and litellm's OpenAI-compatible provider (OCCUSIM_LEAN_HTTP=0)."""

from __future__ import annotations

import pytest

from occusim.llm import LLMError, complete, start_local_model

PATIENT_SCHEMA = {
    "title": "Patient",
    "type": "object",
    "properties": {"name": {"type": "string"}, "priority": {"type": "integer", "minimum": 1, "maximum": 5}},
    "required": ["name", "priority"],
    "additionalProperties": False,
}


@pytest.mark.local_model
@pytest.mark.parametrize("lean", ["1", "0"], ids=["lean path", "through litellm"])
async def test_local_model_returns_schema_constrained_json(local_model, monkeypatch, lean):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
    messages = [
        {"role": "system", "content": "You are a triage nurse's records system. Reply in JSON."},
        {"role": "user", "content": "Register the patient Ana Ruiz with priority 2."},
    ]

    completion = await complete(local_model, messages, response_schema=PATIENT_SCHEMA, max_tokens=48, cache=False)

    record = completion.json()
    assert set(record) == {"name", "priority"}
    assert isinstance(record["name"], str)
    assert isinstance(record["priority"], int) and 1 <= record["priority"] <= 5
    assert completion.model == "local"
    assert completion.usage.prompt_tokens > 0 and completion.usage.completion_tokens > 0
    assert completion.usage.cost_usd == 0.0

    endpoint = await start_local_model()
    assert endpoint.api_base.startswith("http://127.0.0.1:")
    assert (await start_local_model()) is endpoint


async def test_missing_local_model_file_is_named(tmp_path):
    missing = tmp_path / "absent.gguf"
    with pytest.raises(LLMError, match=r"absent\.gguf does not exist"):
        await complete(f"local:{missing}", [{"role": "user", "content": "hi"}], cache=False)


async def test_start_local_model_rejects_remote_models():
    with pytest.raises(LLMError, match="not a local model"):
        await start_local_model("openai/gpt-4.1")
