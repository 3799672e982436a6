"""complete(): the single entry point every model call in occusim goes through."""

from __future__ import annotations

import asyncio
import json
import re
import time
import weakref
from collections.abc import Iterable
from typing import Any

from ._cache import ResponseCache, as_cached, default_cache
from ._completion import Completion, ToolCall
from ._config import ModelConfig
from ._errors import LLMOutputError, ProviderAnswerError
from ._json_output import parse_json_output
from ._litellm import load_litellm_async
from ._local import LOCAL_ALIAS, LocalEndpoint, local_cache_identity, local_endpoint
from ._openai_http import DirectRoute, direct_route, import_in_background, lean_cost, lean_enabled, post_chat
from ._prices import load_prices, read_prices_soon
from ._retry import RetryPolicy, with_retries
from ._scripted import SCRIPTED_LITELLM_MODEL, mock_tool_calls, run_responder, scripted_responder
from ._usage import litellm_cost, usage_from_response

# Providers whose OpenAI-compatible servers accept response_format json_schema even where litellm's
# capability map has no entry for the model name.
_SCHEMA_PASSTHROUGH_PREFIXES = ("hosted_vllm/", "openai/", "ollama_chat/", "lm_studio/")


def warm_up(configs: Iterable[ModelConfig]) -> None:
    """Start loading, in the background, what calling these models will take: the lean path's HTTP client
    when one of them is reached through it (see `import_in_background`)."""
    if lean_enabled() and any(config.is_local or (not config.is_scripted and direct_route(config) is not None)
                              for config in configs):
        import_in_background()


async def complete(
    model: str | ModelConfig,
    messages: list[dict],
    *,
    tools: list[dict] | None = None,
    response_schema: dict | None = None,
    temperature: float | None = 0.0,
    seed: int | None = None,
    cache_seed: int | None = None,
    timeout: float = 120.0,  # noqa: ASYNC109 - forwarded to the provider request, not awaited here
    max_tokens: int | None = None,
    role: str = "world_model",
    cache: ResponseCache | bool | None = None,
    retry: RetryPolicy | None = None,
    keep_unreadable_arguments: bool = False,
) -> Completion:
    """Ask `model` for one chat completion, with caching, retries and usage accounting.

    `temperature=None` sends none (the provider's default), as do `seed` and `max_tokens` when None.
    `seed` is sent to the provider and keys the cache; `cache_seed` only keys the cache (for protocols
    that send no seed), so that each trial is its own sample and a re-run of it is served from the cache.
    A tool call whose arguments are not a JSON object raises LLMOutputError, unless
    `keep_unreadable_arguments`: then it is returned with `arguments` {} and the reason in `unreadable`
    (a protocol that hands the model's own text on, as OccuBench's harness does).
    """
    config = model if isinstance(model, ModelConfig) else ModelConfig(model=model)
    store = _select_cache(cache, config, temperature, seed if cache_seed is None else cache_seed)
    request: dict[str, Any] = {
        "model": config.model,
        "tools": tools,
        "response_schema": response_schema,
        "temperature": temperature,
        "seed": seed,
        "max_tokens": max_tokens,
        "timeout": timeout,
        "role": role,
    }
    if store is None:
        return _readable(await _ask(config, messages, request, retry, None, None, keep_unreadable_arguments),
                         keep_unreadable_arguments)
    endpoint = local_cache_identity(config.model) if config.is_local else config.api_base
    key = ResponseCache.key(
        config.model, endpoint, messages, tools, response_schema, temperature, seed, max_tokens,
        cache_seed=cache_seed,
    )
    hit = await store.get(key)
    if hit is not None:
        return _readable(hit, keep_unreadable_arguments)
    # An identical request already on its way (a group of rollouts of one task asks the same first questions
    # at once): wait for its answer, which the cache is about to hold, instead of paying for it again.
    flights = _flights()
    flight = flights.get(key)
    if flight is not None:
        return _readable(as_cached(await asyncio.shield(flight)), keep_unreadable_arguments)
    flight = asyncio.ensure_future(_ask(config, messages, request, retry, store, key, keep_unreadable_arguments))
    flights[key] = flight
    flight.add_done_callback(lambda done: _landed(flights, key, done))
    return _readable(await asyncio.shield(flight), keep_unreadable_arguments)


_FLIGHTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[Completion]]] = (
    weakref.WeakKeyDictionary()
)


def _flights() -> dict[str, asyncio.Future[Completion]]:
    """The cacheable requests in flight on this event loop, by cache key."""
    return _FLIGHTS.setdefault(asyncio.get_running_loop(), {})


def _landed(flights: dict[str, asyncio.Future[Completion]], key: str, done: asyncio.Future[Completion]) -> None:
    if flights.get(key) is done:
        del flights[key]
    if not done.cancelled():
        done.exception()  # retrieved here too: every waiter may have been cancelled


async def _ask(config: ModelConfig, messages: list[dict], request: dict[str, Any], retry: RetryPolicy | None,
               store: ResponseCache | None, key: str | None, keep_unreadable_arguments: bool) -> Completion:
    """One completion from the provider (retried), stored in `store` under `key` unless the caller refuses it."""
    local = await local_endpoint(config.model) if config.is_local and lean_enabled() else None
    route = _local_route(local) if local is not None else None if config.is_scripted else direct_route(config)
    if route is not None and route.priced_as is not None:
        read_prices_soon()
    started = time.perf_counter()
    response = await with_retries(
        lambda: _answer_of(_call_direct(route, messages, request, local) if route
                           else _call_once(config, messages, request)),
        retry or RetryPolicy.from_env(),
        config.model,
        request["role"],
        config,
    )
    latency_ms = (time.perf_counter() - started) * 1000.0
    if config.is_scripted or config.is_local:
        cost: float | None = 0.0
    elif route is not None:
        if route.priced_as is not None:
            await load_prices()
        cost = lean_cost(route, response)
    else:
        cost = litellm_cost(response)
    completion = _to_completion(response, config, latency_ms, cost)
    unreadable = any(call.unreadable for call in completion.tool_calls)
    # A reply the caller refuses is not stored: its re-ask is a new sample.
    if store is not None and key is not None and (keep_unreadable_arguments or not unreadable):
        await store.put(key, completion)
    return completion


def _readable(completion: Completion, keep_unreadable: bool) -> Completion:
    """`completion`, or LLMOutputError for its first call whose arguments are not a JSON object."""
    if not keep_unreadable:
        for call in completion.tool_calls:
            if call.unreadable:
                raise LLMOutputError(call.unreadable, call.raw_arguments)
    return completion


def _select_cache(
    cache: ResponseCache | bool | None, config: ModelConfig, temperature: float | None, seed: int | None
) -> ResponseCache | None:
    if isinstance(cache, ResponseCache):
        return cache
    if cache is False:
        return None
    if cache is True:
        return default_cache()
    # Unseeded samples must stay independent draws, and scripted answers depend on responder state, not
    # the request. A seeded sample is one trial's draw: served again when that trial is re-run.
    if config.is_scripted or (temperature != 0 and seed is None):
        return None
    return default_cache()


def _local_route(endpoint: LocalEndpoint) -> DirectRoute:
    """The local model's llama.cpp server, reached like any OpenAI-compatible endpoint (priced at nothing)."""
    return DirectRoute(f"{endpoint.api_base}/chat/completions", LOCAL_ALIAS, endpoint.api_key, None)


async def _call_direct(route: DirectRoute, messages: list[dict], request: dict[str, Any],
                       local: LocalEndpoint | None = None) -> Any:
    """The lean path: the request body litellm would send an OpenAI-compatible server, sent directly. For the
    local model, the schema travels as the backend's bounded grammar (see LocalEndpoint.schema_arguments),
    whose `extra_body` is merged into the body as litellm merges it."""
    body: dict[str, Any] = {"model": route.model, "messages": messages, **_sent_fields(request)}
    schema = request["response_schema"]
    if schema is not None and local is not None:
        arguments = local.schema_arguments(schema, request["max_tokens"])
        body.update({**arguments.pop("extra_body", {}), **arguments})
    elif schema is not None:
        body["response_format"] = _response_format(schema)
    return await post_chat(route, body, request["timeout"])


def _sent_fields(request: dict[str, Any]) -> dict[str, Any]:
    """The request's fields sent as they are on both paths, where set (None sends the provider's default)."""
    return {name: request[name] for name in ("temperature", "seed", "max_tokens", "tools") if request[name] is not None}


async def _call_once(config: ModelConfig, messages: list[dict], request: dict[str, Any]) -> Any:
    litellm = await load_litellm_async()
    timeout = request["timeout"]
    kwargs: dict[str, Any] = {
        "messages": messages,
        "timeout": timeout,
        # Retries are ours (RetryPolicy); the provider clients must not add their own.
        "num_retries": 0,
        "max_retries": 0,
        "drop_params": True,
        **_sent_fields(request),
    }

    schema = request["response_schema"]
    schema_native = True
    finish_reason = None
    if config.is_scripted:
        reply = await asyncio.wait_for(
            run_responder(scripted_responder(config.model), messages, request), timeout
        )
        kwargs.update(model=SCRIPTED_LITELLM_MODEL, custom_llm_provider="openai", mock_response=reply.text)
        if reply.tool_calls:
            kwargs["mock_tool_calls"] = mock_tool_calls(reply)
        finish_reason = reply.finish_reason
    elif config.is_local:
        endpoint = await local_endpoint(config.model)
        kwargs.update(model=endpoint.litellm_model, api_base=endpoint.api_base, api_key=endpoint.api_key)
        if schema is not None:
            kwargs.update(endpoint.schema_arguments(schema, request["max_tokens"]))
            schema = None
    else:
        kwargs["model"] = config.model
        if config.api_base:
            kwargs["api_base"] = config.api_base
        if config.api_key:
            kwargs["api_key"] = config.api_key
        schema_native = _supports_schema(litellm, config.model)

    if schema is not None:
        if schema_native:
            kwargs["response_format"] = _response_format(schema)
        else:
            kwargs["messages"] = _with_json_instruction(messages, schema)
    response = await litellm.acompletion(**kwargs)
    if finish_reason is not None:
        response.choices[0].finish_reason = finish_reason
    return response


async def _answer_of(call: Any) -> Any:
    """The provider's response once it is a usable chat completion; ProviderAnswerError otherwise, so that a
    malformed answer is retried and then reported as the provider's failure, never as the caller's."""
    response = await call
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise ProviderAnswerError("the provider answered with no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise ProviderAnswerError("the provider's first choice has no message")
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise ProviderAnswerError(f"the provider's message content is {type(content).__name__}, not text")
    calls = getattr(message, "tool_calls", None)
    if calls is not None and not isinstance(calls, list):
        raise ProviderAnswerError(f"the provider's tool_calls are {type(calls).__name__}, not a list")
    for call in calls or []:
        function = getattr(call, "function", None)
        if function is None or not isinstance(getattr(function, "name", None), str):
            raise ProviderAnswerError("a tool call in the provider's answer has no function name")
    if not content and not calls and getattr(choices[0], "finish_reason", None) == "length":
        raise ProviderAnswerError("the provider stopped at its token limit before writing anything")
    return response


def _supports_schema(litellm: Any, model: str) -> bool:
    if model.startswith(_SCHEMA_PASSTHROUGH_PREFIXES):
        return True
    try:
        return bool(litellm.supports_response_schema(model=model))
    except Exception:
        return False


def _response_format(schema: dict) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": _schema_name(schema), "schema": schema}}


def _schema_name(schema: dict) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "response"))
    return name[:64] or "response"


def _with_json_instruction(messages: list[dict], schema: dict) -> list[dict]:
    instruction = (
        "Answer with a single JSON object and nothing else. It must validate against this JSON Schema:\n"
        + json.dumps(schema, separators=(",", ":"))
    )
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        first = {**messages[0], "content": messages[0]["content"] + "\n\n" + instruction}
        return [first, *messages[1:]]
    return [{"role": "system", "content": instruction}, *messages]


def _to_completion(response: Any, config: ModelConfig, latency_ms: float, cost: float | None) -> Completion:
    choice = response.choices[0]
    message = choice.message
    calls = [_tool_call(call, index) for index, call in enumerate(getattr(message, "tool_calls", None) or [])]
    return Completion(
        text=message.content or "",
        tool_calls=calls,
        usage=usage_from_response(response, cost),
        latency_ms=latency_ms,
        model=config.model,
        cached=False,
        finish_reason=getattr(choice, "finish_reason", None),
    )


def _tool_call(call: Any, index: int) -> ToolCall:
    name = call.function.name or ""
    raw = call.function.arguments or ""
    if raw.strip() == "":
        arguments: Any = {}
    else:
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError:
            try:
                arguments = parse_json_output(raw)
            except LLMOutputError:
                return ToolCall(id=call.id or f"call_{index}", name=name, arguments={}, raw_arguments=raw,
                                unreadable=f"tool call {name!r} has arguments that are not JSON")
    if not isinstance(arguments, dict):
        return ToolCall(id=call.id or f"call_{index}", name=name, arguments={}, raw_arguments=raw,
                        unreadable=f"tool call {name!r} has arguments that are not a JSON object")
    return ToolCall(id=call.id or f"call_{index}", name=name, arguments=arguments, raw_arguments=raw)
