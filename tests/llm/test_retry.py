"""Transient provider failures are retried with backoff; auth failures and exhausted retries raise."""

from __future__ import annotations

import asyncio

import litellm
import pytest

from occusim.llm import ProviderError, RetryPolicy, complete, scripted_model

USER = [{"role": "user", "content": "ping"}]
FAST = RetryPolicy(attempts=4, base_delay=0.001, max_delay=0.01)


def flaky(failures: list[BaseException], answer: str = "pong"):
    calls = []

    def responder(messages, request):
        calls.append(1)
        if len(calls) <= len(failures):
            raise failures[len(calls) - 1]
        return answer

    return responder, calls


def rate_limit(model: str) -> litellm.RateLimitError:
    return litellm.RateLimitError(message="slow down", llm_provider="openai", model=model)


async def test_rate_limited_twice_then_answers():
    responder, calls = flaky([rate_limit("m"), rate_limit("m")])
    model = scripted_model(responder, name="rate-limited")

    completion = await complete(model, USER, retry=FAST)

    assert completion.text == "pong"
    assert len(calls) == 3


async def test_server_errors_and_timeouts_are_retried():
    failures = [
        litellm.InternalServerError(message="boom", llm_provider="openai", model="m"),
        litellm.ServiceUnavailableError(message="down", llm_provider="openai", model="m"),
        litellm.Timeout(message="slow", llm_provider="openai", model="m"),
    ]
    responder, calls = flaky(failures)

    completion = await complete(scripted_model(responder), USER, retry=FAST)

    assert completion.text == "pong"
    assert len(calls) == 4


async def test_always_failing_raises_provider_error_with_model_and_attempts():
    responder, calls = flaky([rate_limit("m")] * 10)
    model = scripted_model(responder, name="always-limited")

    with pytest.raises(ProviderError) as caught:
        await complete(model, USER, retry=RetryPolicy(attempts=3, base_delay=0.001))

    error = caught.value
    assert len(calls) == 3
    assert error.model == "scripted/always-limited"
    assert error.attempts == 3
    assert isinstance(error.cause, litellm.RateLimitError)
    assert "scripted/always-limited" in str(error)
    assert "3 attempts" in str(error)
    assert "slow down" in str(error)


async def test_authentication_error_is_not_retried():
    failure = litellm.AuthenticationError(message="bad key", llm_provider="openai", model="m")
    responder, calls = flaky([failure] * 5)
    model = scripted_model(responder, name="bad-key")

    with pytest.raises(ProviderError, match=r"1 attempt.*OCCUSIM_JUDGE_API_KEY") as caught:
        await complete(model, USER, retry=FAST, role="judge")

    assert len(calls) == 1
    assert caught.value.attempts == 1


async def test_bad_request_is_not_retried():
    failure = litellm.BadRequestError(message="no such field", llm_provider="openai", model="m")
    responder, calls = flaky([failure] * 5)

    with pytest.raises(ProviderError, match="no such field"):
        await complete(scripted_model(responder), USER, retry=FAST)

    assert len(calls) == 1


async def test_slow_responder_hits_the_timeout_and_is_retried():
    calls = []

    async def responder(messages, request):
        calls.append(1)
        if len(calls) == 1:
            await asyncio.sleep(10)
        return "late but fine"

    completion = await complete(scripted_model(responder), USER, timeout=0.05, retry=FAST)

    assert completion.text == "late but fine"
    assert len(calls) == 2


async def test_env_sets_default_attempts(monkeypatch):
    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "2")
    assert RetryPolicy.from_env().attempts == 2
    responder, calls = flaky([rate_limit("m")] * 10)
    model = scripted_model(responder)

    with pytest.raises(ProviderError, match="2 attempts"):
        await complete(model, USER)

    assert len(calls) == 2


async def test_non_provider_exceptions_propagate_unchanged():
    def responder(messages, request):
        raise KeyError("scripted bug")

    with pytest.raises(KeyError, match="scripted bug"):
        await complete(scripted_model(responder), USER, retry=FAST)
