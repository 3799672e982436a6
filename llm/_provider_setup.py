"""Which provider failures are the operator's configuration (an endpoint that refuses or does not resolve, a
key missing or refused, an unknown model), and which setting each one points at."""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit, urlunsplit

from ._config import ModelConfig

UNREACHABLE = "endpoint unreachable"
KEY_REFUSED = "key refused"
KEY_MISSING = "key missing"
MODEL_UNKNOWN = "model unknown"

# Provider prefix -> the variables litellm reads for its API base, for the providers the lean path serves too.
_BASE_VARIABLES = {"openai/": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "hosted_vllm/": ("HOSTED_VLLM_API_BASE",)}


def unreachable_cause(error: BaseException) -> bool:
    """Whether a refused connection or a host name that does not resolve lies behind `error`."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ConnectionRefusedError, socket.gaierror)):
            return True
        inner = getattr(current, "os_error", None)  # aiohttp keeps the socket's error here
        if isinstance(inner, (ConnectionRefusedError, socket.gaierror)):
            return True
        current = current.__cause__ or current.__context__
    return False


def configuration_kind(error: BaseException) -> str | None:
    """The kind of configuration error `error` is (UNREACHABLE, KEY_REFUSED, ...), or None for any other."""
    from ._http_errors import EndpointUnreachableError, ProviderHTTPError

    if isinstance(error, EndpointUnreachableError):
        return UNREACHABLE
    if isinstance(error, ProviderHTTPError):
        return _by_status(error.status_code)
    import openai

    if isinstance(error, openai.OpenAIError) and _says_key_missing(str(error)):
        return KEY_MISSING  # litellm reports the OpenAI client's refusal to start without a key as a 500
    if unreachable_cause(error):
        return UNREACHABLE  # litellm reports a refused connection as a 500 whose causes hold the socket's error
    if isinstance(error, openai.APIConnectionError):
        return None
    if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError)):
        return KEY_REFUSED
    if isinstance(error, openai.NotFoundError):
        return MODEL_UNKNOWN
    status = getattr(error, "status_code", None)  # litellm's APIError carries the status it wraps
    return _by_status(status) if isinstance(status, int) else None


def _by_status(status: int | None) -> str | None:
    return {401: KEY_REFUSED, 403: KEY_REFUSED, 404: MODEL_UNKNOWN}.get(status or 0)


def _says_key_missing(text: str) -> bool:
    # The OpenAI client's words when it has no key at all, as litellm passes them on.
    return any(words in text for words in ("Missing credentials", "api_key client option must be set"))


def setting_to_check(kind: str, config: ModelConfig, role: str) -> str:
    """What the operator should check for a configuration error of `kind`: the URL and the variable that set
    it, or the key's variable, or the model name."""
    prefix = f"OCCUSIM_{role.upper()}_"
    if kind == UNREACHABLE:
        url, variable = endpoint_of(config, prefix)
        where = f" (set by {variable})" if variable else f" (set it with {prefix}API_BASE)"
        return f"check that the endpoint {url} is running and reachable{where}"
    if kind in (KEY_REFUSED, KEY_MISSING):
        variable = key_variable(config, prefix)
        if kind == KEY_MISSING:
            return f"no API key is set: set {variable} (or {prefix}API_KEY)"
        also = f" (or {prefix}API_KEY)" if variable != prefix + "API_KEY" else ""
        return f"the endpoint refused the key: check {variable}{also}"
    url, _ = endpoint_of(config, prefix)
    return (f"check the model name {config.model!r} (--{role.replace('_', '-')}-model, {prefix}MODEL or "
            f"OCCUSIM_MODEL) and the endpoint {url}")


def endpoint_of(config: ModelConfig, prefix: str) -> tuple[str, str | None]:
    """The model's API base as shown to the operator (credentials in it hidden), and the variable it came from."""
    if config.api_base:
        variable = prefix + "API_BASE" if os.environ.get(prefix + "API_BASE") == config.api_base else None
        return _shown(config.api_base), variable
    for model_prefix, names in _BASE_VARIABLES.items():
        if config.model.startswith(model_prefix):
            for name in names:
                if os.environ.get(name):
                    return _shown(os.environ[name]), name
    return f"of {config.model!r} (the provider's default)", None


def key_variable(config: ModelConfig, prefix: str) -> str:
    """The variable the key was read from, or the one litellm reads for the model's provider."""
    if os.environ.get(prefix + "API_KEY"):
        return prefix + "API_KEY"
    provider = config.model.split("/", 1)[0] if "/" in config.model else "openai"
    return f"{provider.upper()}_API_KEY"


def _shown(url: str) -> str:
    parts = urlsplit(url)
    if parts.username or parts.password:
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit(parts._replace(netloc=netloc))
    return url
