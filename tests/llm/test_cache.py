"""The SQLite response cache: hits skip the model, request changes miss, entries survive reopening."""

from __future__ import annotations

import asyncio

from occusim.llm import ResponseCache, RetryPolicy, ScriptedReply, complete, scripted_model, set_default_cache

USER = [{"role": "user", "content": "Summarise the shift handover."}]


def counting(answer="Two beds free.", tool_calls=None):
    calls = []

    def responder(messages, request):
        calls.append(request)
        return ScriptedReply(text=answer, tool_calls=tool_calls or [])

    return responder, calls


async def test_second_identical_call_is_a_hit_with_no_model_call(tmp_path):
    cache = ResponseCache(tmp_path / "responses.sqlite")
    responder, calls = counting()
    model = scripted_model(responder, name="cached-handover")

    first = await complete(model, USER, cache=cache)
    second = await complete(model, USER, cache=cache)

    assert len(calls) == 1
    assert first.cached is False
    assert second.cached is True
    assert second.text == first.text
    assert second.model == first.model
    assert second.finish_reason == first.finish_reason
    assert (cache.hits, cache.misses) == (1, 1)
    # A hit spends nothing: no model call, no tokens, no cost.
    assert second.usage.calls == 0
    assert second.usage.cached_calls == 1
    assert second.usage.prompt_tokens == 0
    assert second.usage.cost_usd == 0.0


async def test_tool_calls_survive_the_cache(tmp_path):
    cache = ResponseCache(tmp_path / "responses.sqlite")
    responder, calls = counting("", [{"name": "admit", "arguments": {"bed": 4}}])
    model = scripted_model(responder)

    first = await complete(model, USER, cache=cache)
    second = await complete(model, USER, cache=cache)

    assert second.cached is True
    assert second.tool_calls == first.tool_calls
    assert second.tool_calls[0].arguments == {"bed": 4}


async def test_changed_seed_temperature_or_messages_miss(tmp_path):
    cache = ResponseCache(tmp_path / "responses.sqlite")
    responder, calls = counting()
    model = scripted_model(responder)

    await complete(model, USER, cache=cache, seed=1)
    await complete(model, USER, cache=cache, seed=2)
    await complete(model, USER, cache=cache, seed=1, temperature=0.7)
    await complete(model, USER, cache=cache, seed=1, max_tokens=10)
    await complete(model, [{"role": "user", "content": "Something else."}], cache=cache, seed=1)
    await complete(model, USER, cache=cache, seed=1)

    assert len(calls) == 5
    assert (cache.hits, cache.misses) == (1, 5)


async def test_entries_persist_across_cache_instances(tmp_path):
    path = tmp_path / "nested" / "responses.sqlite"
    responder, calls = counting()
    model = scripted_model(responder)

    writer = ResponseCache(path)
    await complete(model, USER, cache=writer)
    writer.close()
    reader = ResponseCache(path)
    again = await complete(model, USER, cache=reader)

    assert len(calls) == 1
    assert again.cached is True
    assert (reader.hits, reader.misses) == (1, 0)


async def test_concurrent_use_of_one_cache(tmp_path):
    cache = ResponseCache(tmp_path / "responses.sqlite")
    responder, calls = counting()
    model = scripted_model(responder)
    prompts = [[{"role": "user", "content": f"bed {i}"}] for i in range(12)]

    await asyncio.gather(*(complete(model, p, cache=cache) for p in prompts))
    again = await asyncio.gather(*(complete(model, p, cache=cache) for p in prompts))

    assert len(calls) == 12
    assert all(c.cached for c in again)
    assert (cache.hits, cache.misses) == (12, 12)


async def test_scripted_models_skip_the_default_cache(isolated_default_cache):
    responder, calls = counting()
    model = scripted_model(responder)

    await complete(model, USER)
    await complete(model, USER)

    assert len(calls) == 2
    assert isolated_default_cache.hits == isolated_default_cache.misses == 0


async def test_cache_true_uses_the_default_cache(isolated_default_cache):
    responder, calls = counting()
    model = scripted_model(responder)

    await complete(model, USER, cache=True)
    hit = await complete(model, USER, cache=True)

    assert hit.cached is True
    assert len(calls) == 1
    assert isolated_default_cache.hits == 1


async def test_default_cache_can_be_switched_off(monkeypatch):
    responder, calls = counting()
    model = scripted_model(responder)

    set_default_cache(None)
    await complete(model, USER, cache=True)
    await complete(model, USER, cache=True)
    assert len(calls) == 2

    set_default_cache(ResponseCache(":memory:"))
    monkeypatch.setenv("OCCUSIM_NO_CACHE", "1")
    await complete(model, USER, cache=True)
    await complete(model, USER, cache=True)
    assert len(calls) == 4


async def test_cache_false_never_stores(tmp_path):
    responder, calls = counting()
    model = scripted_model(responder)

    await complete(model, USER, cache=True)
    miss = await complete(model, USER, cache=False)

    assert miss.cached is False
    assert len(calls) == 2


def test_key_depends_on_every_request_field():
    base = dict(
        model="openai/gpt-4.1", api_base=None, messages=USER, tools=None, response_schema=None,
        temperature=0.0, seed=None, max_tokens=None,
    )
    variants = [
        {"model": "openai/gpt-4.1-mini"},
        {"api_base": "http://127.0.0.1:8000/v1"},
        {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
        {"response_schema": {"type": "object"}},
        {"temperature": 0.5},
        {"temperature": None},  # the provider's default, not 0
        {"seed": 3},
        {"max_tokens": 64},
    ]
    keys = {ResponseCache.key(**base)} | {ResponseCache.key(**{**base, **v}) for v in variants}
    assert len(keys) == len(variants) + 1
    reordered = {**base, "response_schema": {"b": 1, "a": 2}}
    assert ResponseCache.key(**reordered) == ResponseCache.key(**{**base, "response_schema": {"a": 2, "b": 1}})


async def test_each_seed_is_its_own_sample_and_a_rerun_of_one_is_a_hit(tmp_path):
    """Trials send their own seed: a sampled call is cached per seed, never shared between seeds."""
    cache = ResponseCache(tmp_path / "responses.sqlite")
    responder, calls = counting()
    model = scripted_model(responder)

    for _ in range(2):
        for trial_seed in (40, 41, 42):
            await complete(model, USER, cache=cache, seed=trial_seed, temperature=1.0)

    assert [request["seed"] for request in calls] == [40, 41, 42]
    assert (cache.hits, cache.misses) == (3, 3)


async def test_a_cache_seed_keys_the_cache_without_reaching_the_provider(tmp_path):
    responder, calls = counting()
    model = scripted_model(responder)
    cache = ResponseCache(tmp_path / "responses.sqlite")

    for _ in range(2):
        for trial_seed in (0, 1):
            await complete(model, USER, cache=cache, cache_seed=trial_seed, temperature=1.0)
    assert [request["seed"] for request in calls] == [None, None]
    assert (cache.hits, cache.misses) == (2, 2)

    # The cache seed sets the entry apart; without one the key is the plain request's, as before.
    keys = {ResponseCache.key("m", None, USER, None, None, 1.0, None, None, cache_seed=s) for s in (None, 0, 1)}
    assert len(keys) == 3
    assert ResponseCache.key("m", None, USER, None, None, 1.0, 3, None) == ResponseCache.key(
        "m", None, USER, None, None, 1.0, 3, None, cache_seed=None)


async def test_identical_requests_in_flight_at_once_make_one_model_call(tmp_path):
    # A group of rollouts of one task asks its first questions at the same moment: one call answers them all.
    cache = ResponseCache(tmp_path / "responses.sqlite")
    calls = []

    async def slow(messages, request):
        calls.append(messages[-1]["content"])
        await asyncio.sleep(0.2)
        return ScriptedReply(text=f"answer to {messages[-1]['content']}")

    model = scripted_model(slow, name="slow-handover")
    other = [{"role": "user", "content": "Who is on call?"}]

    answers = await asyncio.gather(*(complete(model, USER, cache=cache) for _ in range(4)),
                                   complete(model, other, cache=cache))

    assert sorted(calls) == sorted([USER[0]["content"], other[0]["content"]])
    assert [answer.text for answer in answers[:4]] == ["answer to Summarise the shift handover."] * 4
    assert [answer.cached for answer in answers] == [False, True, True, True, False]
    assert [answer.usage.cost_usd for answer in answers[1:4]] == [0.0] * 3, "only the call that asked pays"
    assert (await complete(model, USER, cache=cache)).cached is True and len(calls) == 2


async def test_a_failure_in_flight_reaches_every_identical_request_and_is_not_kept(tmp_path):
    cache = ResponseCache(tmp_path / "responses.sqlite")
    calls = []

    async def failing_once(messages, request):
        calls.append(1)
        await asyncio.sleep(0.1)
        if len(calls) == 1:
            raise ValueError("provider hiccup")
        return ScriptedReply(text="recovered")

    model = scripted_model(failing_once, name="failing-once-handover")
    retry = RetryPolicy(attempts=1)

    results = await asyncio.gather(*(complete(model, USER, cache=cache, retry=retry) for _ in range(3)),
                                   return_exceptions=True)

    assert len(calls) == 1 and all(isinstance(result, Exception) for result in results)
    assert (await complete(model, USER, cache=cache, retry=retry)).text == "recovered"
