"""The lean path to OpenAI-compatible endpoints (`openai/*` and `hosted_vllm/*` given an API base): one async
aiohttp POST per call and a plain JSON parse, without litellm's per-call bookkeeping. (aiohttp, not httpx:
httpx's pool scans every open connection on each request, 2.9 ms of CPU per request at 128 connections
against aiohttp's 0.14 ms; bench/bench_vs_occubench.py shows what that costs per episode.)"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import orjson

from ._config import ModelConfig
from ._errors import ProviderAnswerError
from ._http_errors import APIConnectionError, EndpointUnreachableError, Timeout, status_error
from ._prices import listed_cost
from ._provider_setup import unreachable_cause
from ._usage import reused_prompt_tokens

if TYPE_CHECKING:
    import aiohttp

# Provider prefix -> the environment variables litellm reads for its API base and key, in its order.
_PROVIDERS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "openai/": (("OPENAI_BASE_URL", "OPENAI_API_BASE"), ("OPENAI_API_KEY",)),
    "hosted_vllm/": (("HOSTED_VLLM_API_BASE",), ("HOSTED_VLLM_API_KEY",)),
}
# OCCUSIM_LEAN_HTTP=0 sends these models through litellm too (to compare the paths, or as a fallback).
SWITCH = "OCCUSIM_LEAN_HTTP"


@dataclass(frozen=True)
class DirectRoute:
    """Where a lean call goes: the chat completions URL, the model name sent, the key, the price entry."""

    url: str
    model: str
    api_key: str | None
    priced_as: str | None


def direct_route(config: ModelConfig) -> DirectRoute | None:
    """The lean route for `config`, or None when litellm must serve it."""
    if not lean_enabled():
        return None
    for prefix, (base_names, key_names) in _PROVIDERS.items():
        if not config.model.startswith(prefix):
            continue
        base = config.api_base or _first_set(base_names)
        if not base:
            return None
        name = config.model[len(prefix):]
        # litellm prices openai/* by the bare name and has no prices for self-hosted vLLM models.
        priced_as = name if prefix == "openai/" else None
        return DirectRoute(base.rstrip("/") + "/chat/completions", name, config.api_key or _first_set(key_names),
                           priced_as)
    return None


def lean_enabled() -> bool:
    """Whether OpenAI-compatible endpoints (and the local model's server) are reached without litellm."""
    return os.environ.get(SWITCH, "").strip().lower() not in ("0", "false", "no", "off")


def _first_set(names: tuple[str, ...]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, tuple[aiohttp.ClientSession, AsyncIterator[None]]]
_sessions = weakref.WeakKeyDictionary()
_aiohttp: Any = None


def import_in_background() -> None:
    """Start importing the HTTP client now, in a thread of its own. Most of its import is building its TLS
    context (reading the system's CA certificates), which runs without the interpreter's lock: on a second core,
    beside the caller's own imports, instead of at the first call."""
    if _aiohttp is None:
        threading.Thread(target=_import_aiohttp, name="occusim-import-aiohttp", daemon=True).start()


def _import_aiohttp() -> Any:
    # Imported at the first lean call, so that `import occusim.llm` stays cheap.
    global _aiohttp
    if _aiohttp is None:
        import aiohttp

        _aiohttp = aiohttp
    return _aiohttp


async def _session() -> aiohttp.ClientSession:
    """One pooled session per event loop: connections are kept alive between calls."""
    loop = asyncio.get_running_loop()
    held = _sessions.get(loop)
    if held is not None and not held[0].closed:
        return held[0]
    aiohttp = _aiohttp or await asyncio.to_thread(_import_aiohttp)
    held = _sessions.get(loop)  # made by a call that started while this one waited for the import
    if held is not None and not held[0].closed:
        return held[0]
    # trust_env would read ~/.netrc and the proxy variables in a thread on every request; endpoints
    # behind a proxy take litellm's path (OCCUSIM_LEAN_HTTP=0).
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trust_env=False)
    keeper = _closed_with_the_loop(session)
    await anext(keeper)  # runs to its first yield without suspending: no other call can interleave
    _sessions[loop] = (session, keeper)
    return session


async def _closed_with_the_loop(session: aiohttp.ClientSession) -> AsyncIterator[None]:
    # asyncio.run() finalises live async generators before it closes the loop: the session closes then.
    try:
        yield
    finally:
        await session.close()


async def post_chat(route: DirectRoute, body: dict[str, Any], timeout: float) -> Any:  # noqa: ASYNC109 - the request's own deadline
    """POST one chat completion request; the answer as attribute objects (`.choices[0].message...`).

    Error statuses, connection failures and timeouts raise ProviderHTTPError subclasses; a body that is not
    a chat completion raises ProviderAnswerError.
    """
    headers = {"content-type": "application/json"}
    if route.api_key:
        headers["authorization"] = f"Bearer {route.api_key}"
    content = encode_body(body)
    session = await _session()
    aiohttp = _aiohttp
    try:
        async with session.post(route.url, data=content, headers=headers,
                                timeout=aiohttp.ClientTimeout(total=timeout)) as response:
            status, raw = response.status, await response.read()
    except TimeoutError as error:
        raise Timeout(f"no answer from {route.url} within {timeout:g} s") from error
    except aiohttp.ClientError as error:
        if unreachable_cause(error):
            raise EndpointUnreachableError(f"cannot reach {route.url}: {type(error).__name__}: {error}") from error
        raise APIConnectionError(f"cannot reach {route.url}: {type(error).__name__}: {error}") from error
    if status >= 400:
        raise status_error(status, _error_message(raw))
    try:
        data = decode_body(raw)
    except ValueError:
        raise ProviderAnswerError(f"the provider's answer is not JSON: {_text(raw, 200)!r}") from None
    return answer_of(data)


def encode_body(body: dict[str, Any]) -> bytes:
    """The request as JSON (compact UTF-8). orjson writes it in a sixth of the standard library's time, which
    mattered: the body carries the whole conversation, and encoding it was a tenth of a run's CPU. What orjson
    refuses (integers beyond 64 bits, keys that are not strings) goes through the standard library; a float that
    is not finite, which is not JSON, is written as null."""
    try:
        return orjson.dumps(body)
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def decode_body(raw: bytes) -> Any:
    """The answer's JSON; raises ValueError when it is not JSON. What orjson refuses but the standard library
    reads (NaN and Infinity) is read as before."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


def _text(raw: bytes, limit: int) -> str:
    return raw[:limit].decode("utf-8", errors="replace")


def _error_message(raw: bytes) -> str:
    try:
        data = json.loads(raw)
    except ValueError:
        return _text(raw, 500) or "no error text"
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    return _text(raw, 500) or "no error text"


def answer_of(data: Any) -> Any:
    """A chat completion body as attribute objects; ProviderAnswerError where its structure is not one.
    (What the fields may hold is then checked once for both paths by the gateway.)"""
    if not isinstance(data, dict):
        raise ProviderAnswerError(f"the provider's answer is {type(data).__name__}, not a JSON object")
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise ProviderAnswerError("the provider answered with no choices")
    parsed = []
    for choice in choices:
        if not isinstance(choice, dict):
            raise ProviderAnswerError("a choice in the provider's answer is not an object")
        message = choice.get("message")
        if message is not None and not isinstance(message, dict):
            raise ProviderAnswerError("the provider's message is not an object")
        parsed.append(SimpleNamespace(
            finish_reason=choice.get("finish_reason"),
            message=None if message is None else _message(message),
        ))
    usage = data.get("usage")
    return SimpleNamespace(choices=parsed, usage=SimpleNamespace(**usage) if isinstance(usage, dict) else None)


def _message(message: dict[str, Any]) -> SimpleNamespace:
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        calls = [_tool_call(call) for call in calls]
    return SimpleNamespace(content=message.get("content"), tool_calls=calls or None)


def _tool_call(call: Any) -> SimpleNamespace:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict):
        raise ProviderAnswerError("a tool call in the provider's answer has no function object")
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        raise ProviderAnswerError("a tool call's arguments in the provider's answer are not a string")
    return SimpleNamespace(id=call.get("id"), function=SimpleNamespace(name=function.get("name"), arguments=arguments))


def lean_cost(route: DirectRoute, response: Any) -> float | None:
    """The call's cost as litellm reckons it, from the price map; None for an unpriced model."""
    if route.priced_as is None:
        return None
    usage = response.usage
    return listed_cost(
        route.priced_as,
        int(getattr(usage, "prompt_tokens", 0) or 0),
        int(getattr(usage, "completion_tokens", 0) or 0),
        reused_prompt_tokens(usage),
    )
