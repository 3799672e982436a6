"""Malformed and failing provider answers, from a real loopback provider through the lean path and through
litellm: typed, retried, and told apart from the caller's own mistakes; the provider's text reaches the
operator with secrets redacted."""

from __future__ import annotations

import pytest

from occusim.llm import ProviderAnswerError, ProviderError, RetryPolicy, complete
from tests.helpers import STUB_KEY, Reply, completion_body, provider_stub

USER = [{"role": "user", "content": "ping"}]
FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.01)


@pytest.fixture(autouse=True, params=["lean", "litellm"])
def gateway_path(request, monkeypatch):
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", "1" if request.param == "lean" else "0")

MALFORMED = {
    "no choices": {"id": "x", "object": "chat.completion", "choices": []},
    "choices missing": {"id": "x", "object": "chat.completion"},
    "choices not a list": {"choices": "x"},
    "no message": {"choices": [{"index": 0, "finish_reason": "stop"}]},
    "message not an object": {"choices": [{"index": 0, "message": "hi", "finish_reason": "stop"}]},
    "content not text": {"choices": [{"index": 0, "message": {"role": "assistant", "content": 5}}]},
    "tool calls not a list": {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": "x"}}]
    },
    "cut off before any content": completion_body(None, finish_reason="length"),
    "not JSON": b"<html>bad gateway</html>",
    "JSON null": None,
}


@pytest.mark.parametrize("body", MALFORMED.values(), ids=MALFORMED.keys())
async def test_a_malformed_answer_is_retried_then_a_provider_error(body):
    with provider_stub(Reply(body)) as stub:
        with pytest.raises(ProviderError) as raised:
            await complete(stub.model, USER, retry=FAST, cache=False)

    assert len(stub.requests) == 3
    assert raised.value.attempts == 3


async def test_an_empty_choice_list_is_a_provider_answer_error():
    with provider_stub(Reply({"choices": []})) as stub:
        with pytest.raises(ProviderError) as raised:
            await complete(stub.model, USER, retry=FAST, cache=False)

    assert isinstance(raised.value.cause, ProviderAnswerError)
    assert raised.value.summary == "ProviderAnswerError after 3 attempts"


async def test_a_malformed_answer_followed_by_a_good_one_answers():
    with provider_stub(Reply({"choices": []}), Reply(completion_body("pong"))) as stub:
        completion = await complete(stub.model, USER, retry=FAST, cache=False)

    assert completion.text == "pong"
    assert len(stub.requests) == 2


async def test_a_truncated_answer_with_text_is_kept():
    with provider_stub(Reply(completion_body("partial", finish_reason="length"))) as stub:
        completion = await complete(stub.model, USER, retry=FAST, cache=False)

    assert (completion.text, completion.finish_reason) == ("partial", "length")


async def test_a_rejected_key_is_summarised_for_agents_and_redacted_for_the_operator(monkeypatch):
    monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_KEY", "hunter2-operator-secret")
    text = (f"Incorrect API key provided: Bearer {STUB_KEY}. Also tried hunter2-operator-secret. "
            "You can find your API key at https://platform.example/account/api-keys.")
    body = {"error": {"message": text, "type": "invalid_request_error", "code": "invalid_api_key"}}
    with provider_stub(Reply(body, status=401)) as stub:
        with pytest.raises(ProviderError) as raised:
            await complete(stub.model, USER, retry=FAST, cache=False)

    error = raised.value
    assert len(stub.requests) == 1  # not transient
    assert (error.status, error.error_type) == (401, "AuthenticationError")
    assert error.summary == "HTTP 401 AuthenticationError after 1 attempt; configuration error: key refused"
    operator = str(error)
    assert "Incorrect API key provided" in operator and "[redacted]" in operator
    assert STUB_KEY not in operator and "hunter2-operator-secret" not in operator
