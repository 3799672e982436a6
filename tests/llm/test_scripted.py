"""Scripted models answer through complete() and litellm: text, JSON, tool calls and usage."""

from __future__ import annotations

import pytest

from occusim.environments import Usage
from occusim.llm import (
    Completion,
    LLMError,
    LLMOutputError,
    ScriptedReply,
    UsageLedger,
    complete,
    scripted_model,
)

USER = [{"role": "user", "content": "What is the queue length?"}]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_patient",
            "description": "Find a patient by id.",
            "parameters": {"type": "object", "properties": {"patient_id": {"type": "string"}}},
        },
    }
]


async def test_text_reply_goes_through_litellm_with_usage():
    seen = []

    def responder(messages, request):
        seen.append((messages, request))
        return "Seven patients are waiting."

    model = scripted_model(responder, name="text-reply")
    assert model == "scripted/text-reply"

    completion = await complete(model, USER, temperature=0.3, seed=11, max_tokens=50, role="judge")

    assert isinstance(completion, Completion)
    assert completion.text == "Seven patients are waiting."
    assert completion.tool_calls == []
    assert completion.model == "scripted/text-reply"
    assert completion.cached is False
    assert completion.finish_reason == "stop"
    # litellm's mock path reports its own token counts; they reach our accounting unchanged.
    assert completion.usage.prompt_tokens > 0
    assert completion.usage.completion_tokens > 0
    assert completion.usage.calls == 1
    assert completion.usage.cached_calls == 0
    assert completion.usage.cost_usd == 0.0
    assert completion.latency_ms > 0

    messages, request = seen[0]
    assert messages == USER
    assert request["temperature"] == 0.3
    assert request["seed"] == 11
    assert request["max_tokens"] == 50
    assert request["role"] == "judge"


async def test_dict_reply_becomes_json_text():
    model = scripted_model(lambda messages, request: {"queue": 7, "ok": True}, name="json-reply")
    schema = {"type": "object", "properties": {"queue": {"type": "integer"}}, "required": ["queue"]}

    completion = await complete(model, USER, response_schema=schema)

    assert completion.json() == {"queue": 7, "ok": True}


async def test_response_schema_reaches_the_responder():
    schemas = []

    def responder(messages, request):
        schemas.append(request["response_schema"])
        return {"answer": "x"}

    schema = {"title": "Answer", "type": "object", "properties": {"answer": {"type": "string"}}}
    await complete(scripted_model(responder), USER, response_schema=schema)

    assert schemas == [schema]


async def test_async_responder_with_fenced_json():
    async def responder(messages, request):
        return ScriptedReply(text='Here you go:\n```json\n{"status": "ok"}\n```')

    completion = await complete(scripted_model(responder, name="async-fenced"), USER)

    assert completion.json() == {"status": "ok"}


async def test_tool_calls_are_parsed():
    def responder(messages, request):
        assert request["tools"] == TOOLS
        return ScriptedReply(
            text="",
            tool_calls=[
                {"name": "lookup_patient", "arguments": {"patient_id": "P-104"}},
                {"name": "lookup_patient", "arguments": {"patient_id": "P-105"}},
            ],
        )

    completion = await complete(scripted_model(responder, name="tools"), USER, tools=TOOLS)

    assert [call.name for call in completion.tool_calls] == ["lookup_patient", "lookup_patient"]
    first = completion.tool_calls[0]
    assert first.arguments == {"patient_id": "P-104"}
    assert first.raw_arguments == '{"patient_id": "P-104"}'
    assert first.id
    assert first.id != completion.tool_calls[1].id
    assert completion.text == ""


async def test_tool_call_with_non_json_arguments_is_an_output_error():
    reply = ScriptedReply(tool_calls=[{"name": "lookup_patient", "arguments": "patient P-104"}])
    model = scripted_model(lambda messages, request: reply, name="bad-tool-args")

    with pytest.raises(LLMOutputError, match="lookup_patient"):
        await complete(model, USER, tools=TOOLS)


async def test_unreadable_arguments_are_kept_as_sent_when_asked():
    reply = ScriptedReply(tool_calls=[{"name": "lookup_patient", "arguments": "patient P-104"},
                                      {"name": "lookup_patient", "arguments": '["P-104"]'},
                                      {"name": "lookup_patient", "arguments": '{"patient_id": "P-104"}'}])
    model = scripted_model(lambda messages, request: reply, name="kept-tool-args")

    completion = await complete(model, USER, tools=TOOLS, keep_unreadable_arguments=True)

    bad, array, good = completion.tool_calls
    assert (bad.arguments, bad.raw_arguments) == ({}, "patient P-104") and "not JSON" in (bad.unreadable or "")
    assert (array.arguments, array.raw_arguments) == ({}, '["P-104"]') and "not a JSON object" in (array.unreadable or "")
    assert good.arguments == {"patient_id": "P-104"} and good.unreadable is None


async def test_text_without_json_raises_output_error_on_json():
    model = scripted_model(lambda messages, request: "I cannot answer that.", name="prose")

    completion = await complete(model, USER)

    with pytest.raises(LLMOutputError, match="I cannot answer that"):
        completion.json()


async def test_unknown_scripted_model_names_the_fix():
    with pytest.raises(LLMError, match=r"no scripted model named 'never-registered'.*scripted_model"):
        await complete("scripted/never-registered", USER)


async def test_responder_returning_wrong_type_is_reported():
    model = scripted_model(lambda messages, request: 42, name="wrong-type")

    with pytest.raises(LLMError, match="returned int"):
        await complete(model, USER)


async def test_ledger_sums_usage_by_role():
    model = scripted_model(lambda messages, request: "fine", name="ledger")
    ledger = UsageLedger()

    world = await complete(model, USER)
    judge = await complete(model, USER, role="judge")
    ledger.add("world_model", world)
    ledger.add("world_model", world)
    ledger.add("judge", judge.usage)
    ledger.add("agent", Usage(prompt_tokens=5, completion_tokens=1, cost_usd=None, calls=1))

    assert ledger.by_role["world_model"].calls == 2
    assert ledger.by_role["world_model"].prompt_tokens == 2 * world.usage.prompt_tokens
    assert ledger.by_role["judge"].completion_tokens == judge.usage.completion_tokens
    assert ledger.by_role["agent"].cost_usd is None
    total = ledger.total
    assert total.calls == 4
    assert total.prompt_tokens == 3 * world.usage.prompt_tokens + 5
    assert total.cost_usd == 0.0


async def test_no_temperature_or_cap_is_sent_unless_given_and_a_scripted_finish_reason(monkeypatch):
    import litellm

    sent: list[dict] = []
    real = litellm.acompletion

    async def spy(**kwargs):
        sent.append(kwargs)
        return await real(**kwargs)

    monkeypatch.setattr(litellm, "acompletion", spy)
    model = scripted_model(lambda messages, request: ScriptedReply(text='{"a": ', finish_reason="length"))
    completion = await complete(model, USER, temperature=None, seed=4, role="judge")
    assert completion.finish_reason == "length" and completion.text == '{"a": '
    assert "temperature" not in sent[0] and "max_tokens" not in sent[0] and sent[0]["seed"] == 4
