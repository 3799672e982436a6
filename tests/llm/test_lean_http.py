"""The lean path to OpenAI-compatible endpoints, against a real loopback HTTP stub: what it sends, what it
returns (the same Completion litellm's path returns), its cache, retries, usage, cost and errors."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

import occusim.llm._prices as _prices
from occusim.llm import (
    Completion,
    ModelConfig,
    ProviderAnswerError,
    ProviderConfigError,
    ProviderError,
    RetryPolicy,
    complete,
)
from occusim.llm._openai_http import decode_body, encode_body
from tests.helpers import HANG, STUB_KEY, ProviderStub, Reply, completion_body, provider_stub

USER = [{"role": "system", "content": "You simulate a desk."}, {"role": "user", "content": "ping"}]
FAST = RetryPolicy(attempts=3, base_delay=0.001, max_delay=0.01)
TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Find a record.",
                                           "parameters": {"type": "object", "properties": {"id": {"type": "string"}},
                                                          "required": ["id"]}}}]
SCHEMA = {"title": "observation", "type": "object", "properties": {"ok": {"type": "boolean"}}}


def answer(content: str | None, *, calls: list[dict] | None = None, cached_tokens: int | None = None,
           finish_reason: str = "stop") -> dict:
    body = completion_body(content, finish_reason=finish_reason)
    body["usage"] = {"prompt_tokens": 1200, "completion_tokens": 300, "total_tokens": 1500}
    if cached_tokens is not None:
        body["usage"]["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if calls:
        body["choices"][0]["message"]["tool_calls"] = [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}}
            for i, (name, arguments) in enumerate(calls)
        ]
    return body


def same(completion: Completion) -> Completion:
    return replace(completion, latency_ms=0.0)


async def both_paths(monkeypatch, stub: ProviderStub, model: str, **options) -> tuple[Completion, Completion]:
    config = ModelConfig(model=model, api_base=stub.url, api_key=STUB_KEY)
    lean = await complete(config, USER, cache=False, retry=FAST, **options)
    monkeypatch.setenv("OCCUSIM_LEAN_HTTP", "0")
    through_litellm = await complete(config, USER, cache=False, retry=FAST, **options)
    monkeypatch.delenv("OCCUSIM_LEAN_HTTP")
    return lean, through_litellm


CASES = {
    "text, priced, cached prompt tokens": ("openai/gpt-4o-mini", answer("pong", cached_tokens=400), {}),
    "text, priced": ("openai/gpt-4.1", answer("pong"), {"max_tokens": 64, "seed": 7}),
    "tool calls, unpriced": (
        "openai/fake-agent",
        answer(None, calls=[("lookup", '{"id":"Zürich-7"}'), ("lookup", "")], finish_reason="tool_calls"),
        {"tools": TOOLS, "temperature": None},
    ),
    "schema answer, vLLM": ("hosted_vllm/qwen", answer('{"ok": true}'), {"response_schema": SCHEMA}),
    "cut at the token limit": ("openai/gpt-4o-mini", answer("part", finish_reason="length"), {"max_tokens": 3}),
}


@pytest.mark.parametrize(("model", "body", "options"), CASES.values(), ids=CASES.keys())
async def test_the_lean_path_sends_and_returns_what_litellm_does(monkeypatch, model, body, options):
    with ProviderStub(lambda _n, _body, _key: Reply(body)).running() as stub:
        lean, through_litellm = await both_paths(monkeypatch, stub, model, **options)

    assert same(lean) == same(through_litellm)
    sent_lean, sent_litellm = stub.requests
    assert sent_lean == sent_litellm
    assert sent_lean["model"] == model.split("/", 1)[1]


async def test_usage_and_cost_follow_the_price_map():
    with provider_stub(Reply(answer("pong", cached_tokens=400))) as stub:
        priced = await complete(replace(stub.model, model="openai/gpt-4o-mini"), USER, cache=False)
        unpriced = await complete(stub.model, USER, cache=False)

    assert (priced.usage.prompt_tokens, priced.usage.completion_tokens, priced.usage.calls) == (1200, 300, 1)
    # gpt-4o-mini: 800 fresh prompt tokens at 0.15 $/M, 400 cached at 0.075 $/M, 300 output at 0.6 $/M.
    assert priced.usage.cost_usd == pytest.approx(800 * 0.15e-6 + 400 * 0.075e-6 + 300 * 0.6e-6)
    assert unpriced.usage.cost_usd is None and unpriced.usage.calls == 1


async def test_the_price_map_is_read_while_the_first_priced_call_waits(monkeypatch):
    monkeypatch.setattr(_prices, "_map", None)
    monkeypatch.setattr(_prices, "_reading", False)
    reading_when_asked: list[bool] = []

    def reply(_number, _body, _key):
        reading_when_asked.append(_prices._reading)
        return Reply(answer("pong", cached_tokens=400))

    with ProviderStub(reply).running() as stub:
        priced = await complete(replace(stub.model, model="openai/gpt-4o-mini"), USER, cache=False)

    assert reading_when_asked == [True]
    assert priced.usage.cost_usd == pytest.approx(800 * 0.15e-6 + 400 * 0.075e-6 + 300 * 0.6e-6)


async def test_a_repeated_request_is_served_from_the_cache(tmp_path):
    from occusim.llm import ResponseCache

    cache = ResponseCache(tmp_path / "responses.sqlite")
    with provider_stub(Reply(answer("pong"))) as stub:
        first = await complete(stub.model, USER, cache=cache)
        again = await complete(stub.model, USER, cache=cache)
    cache.close()

    assert len(stub.requests) == 1
    assert (first.cached, again.cached, again.text) == (False, True, "pong")
    assert (again.usage.calls, again.usage.cached_calls) == (0, 1)


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504, 408])
async def test_transient_statuses_are_retried(status):
    with provider_stub(Reply({"error": {"message": "busy"}}, status=status), Reply(answer("pong"))) as stub:
        completion = await complete(stub.model, USER, cache=False, retry=FAST)

    assert completion.text == "pong"
    assert len(stub.requests) == 2


ERRORS = {400: "BadRequestError", 401: "AuthenticationError", 404: "NotFoundError", 422: "BadRequestError",
          429: "RateLimitError", 500: "InternalServerError", 502: "BadGatewayError", 503: "ServiceUnavailableError"}


@pytest.mark.parametrize(("status", "kind"), ERRORS.items())
async def test_errors_are_summarised_as_on_the_litellm_path(monkeypatch, status, kind):
    body = {"error": {"message": f"status {status} from the stub", "type": "x"}}
    summaries = []
    with provider_stub(Reply(body, status=status)) as stub:
        for lean in ("1", "0"):
            monkeypatch.setenv("OCCUSIM_LEAN_HTTP", lean)
            with pytest.raises(ProviderError) as raised:
                await complete(stub.model, USER, cache=False, retry=FAST)
            summaries.append(raised.value.summary)
            assert f"status {status} from the stub" in str(raised.value)

    attempts = "3 attempts" if status >= 429 else "1 attempt"
    # A refused key and an unknown model are the configuration's errors, and their summaries say so.
    setup = {401: "; configuration error: key refused", 404: "; configuration error: model unknown"}.get(status, "")
    assert summaries == [f"HTTP {status} {kind} after {attempts}{setup}"] * 2


async def test_concurrent_first_calls_share_one_connection_pool():
    with provider_stub(Reply(answer("pong"))) as stub:
        answers = await asyncio.gather(*(
            complete(stub.model, [{"role": "user", "content": f"ping {i}"}], cache=False,
                     retry=RetryPolicy(attempts=1))
            for i in range(32)
        ))

    assert [completion.text for completion in answers] == ["pong"] * 32
    assert len(stub.requests) == 32


async def test_a_hanging_endpoint_times_out_and_is_retried():
    with provider_stub(HANG) as stub:
        with pytest.raises(ProviderError) as raised:
            await complete(stub.model, USER, cache=False, retry=FAST, timeout=0.2)

    assert len(stub.requests) == 3
    assert raised.value.error_type == "Timeout" and raised.value.summary == "Timeout after 3 attempts"


async def test_an_endpoint_that_refuses_connections_is_a_configuration_error_not_retried():
    config = ModelConfig(model="openai/stub", api_base="http://127.0.0.1:9/v1")
    with pytest.raises(ProviderConfigError) as raised:
        await complete(config, USER, cache=False, retry=FAST)

    assert raised.value.error_type == "EndpointUnreachableError" and raised.value.attempts == 1
    assert "http://127.0.0.1:9/v1" in str(raised.value)


GARBAGE = {
    "tool call without a function object": {"choices": [{"message": {"content": None, "tool_calls": [{"id": "1"}]}}]},
    "arguments not a string": {
        "choices": [{"message": {"content": None, "tool_calls": [{"function": {"name": "f", "arguments": {}}}]}}]
    },
    "truncated JSON": b'{"choices": [{"message": {"content": "po',
    "a list": [],
    "choice not an object": {"choices": ["pong"]},
}


@pytest.mark.parametrize("body", GARBAGE.values(), ids=GARBAGE.keys())
async def test_garbage_bodies_are_provider_answer_errors(body):
    with provider_stub(Reply(body)) as stub:
        with pytest.raises(ProviderError) as raised:
            await complete(stub.model, USER, cache=False, retry=FAST)

    assert isinstance(raised.value.cause, ProviderAnswerError)
    assert len(stub.requests) == 3


async def test_the_api_base_may_come_from_the_environment(monkeypatch):
    with provider_stub(Reply(answer("pong"))) as stub:
        monkeypatch.setenv("OPENAI_API_BASE", stub.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
        completion = await complete("openai/stub", USER, cache=False)

    assert completion.text == "pong" and stub.requests[0]["model"] == "stub"


def test_the_lean_path_imports_neither_litellm_nor_the_openai_sdk():
    with provider_stub(Reply(answer("pong"))) as stub:
        script = (
            "import asyncio, json, sys\n"
            "from occusim.llm import ModelConfig, complete\n"
            f"config = ModelConfig(model='openai/gpt-4o-mini', api_base={stub.url!r}, api_key='k')\n"
            "completion = asyncio.run(complete(config, [{'role': 'user', 'content': 'ping'}], cache=False))\n"
            "print(json.dumps([completion.text, 'litellm' in sys.modules, 'openai' in sys.modules]))\n"
        )
        ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == ["pong", False, False]


@pytest.mark.parametrize("llguidance", [True, False], ids=["llguidance grammar", "response_format"])
async def test_the_local_model_is_reached_on_the_lean_path_as_through_litellm(monkeypatch, llguidance):
    """The local backend's server is an OpenAI-compatible endpoint: both paths send it the same body (the
    bounded grammar or schema and the token cap that fits it) and return the same Completion."""
    from pathlib import Path

    import occusim.llm._gateway as gateway
    from occusim.llm._local import LocalEndpoint

    with ProviderStub(lambda _n, _body, _key: Reply(answer('{"ok": true}'))).running() as stub:
        endpoint = LocalEndpoint(model_path=Path("model.gguf"), api_base=stub.url, llguidance=llguidance)

        async def started(_model: str) -> LocalEndpoint:
            return endpoint

        monkeypatch.setattr(gateway, "local_endpoint", started)
        lean, through_litellm = await both_paths(monkeypatch, stub, "local", response_schema=SCHEMA, seed=3)

    assert same(lean) == same(through_litellm)
    assert lean.usage.cost_usd == 0.0 and lean.text == '{"ok": true}'
    sent_lean, sent_litellm = stub.requests
    assert sent_lean == sent_litellm
    assert sent_lean["model"] == "occusim-local" and sent_lean["max_tokens"] >= 192
    assert ("grammar" in sent_lean) is llguidance and ("response_format" in sent_lean) is not llguidance


def test_warm_up_loads_the_http_client_in_the_background_only_for_lean_models():
    script = (
        "import json, sys, threading\n"
        "from occusim.llm import ModelConfig, warm_up\n"
        "def loading():\n"
        "    return [t for t in threading.enumerate() if t.name == 'occusim-import-aiohttp']\n"
        "warm_up([ModelConfig(model='anthropic/claude-x'), ModelConfig(model='scripted/triage')])\n"
        "untouched = not loading() and 'aiohttp' not in sys.modules\n"
        "warm_up([ModelConfig(model='openai/x', api_base='http://127.0.0.1:9/v1')])\n"
        "started = bool(loading())\n"
        "for thread in loading():\n"
        "    thread.join(60)\n"
        "print(json.dumps([untouched, started, 'aiohttp' in sys.modules]))\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == [True, True, True]


json_like = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70) | st.floats(allow_nan=False,
                                                                                       allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(max_size=8), json_like, max_size=5))
def test_a_request_body_is_encoded_as_the_json_it_holds(body):
    assert json.loads(encode_body(body)) == body


def test_an_answer_body_is_read_as_json_or_refused_as_not_json():
    assert decode_body(b'{"choices": [], "usage": {"prompt_tokens": 3}}') == {"choices": [], "usage": {"prompt_tokens": 3}}
    assert decode_body(b'{"score": NaN}')["score"] != decode_body(b'{"score": NaN}')["score"]  # NaN, read as before
    for garbage in (b"", b"<html>502</html>", b'{"choices": [', "é".encode("latin-1")):
        with pytest.raises(ValueError):
            decode_body(garbage)
