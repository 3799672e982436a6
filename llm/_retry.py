"""Exponential backoff around provider calls: transient failures retry, auth and bad requests do not."""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from ._config import ModelConfig
from ._errors import LLMError, ProviderAnswerError, ProviderConfigError, ProviderError
from ._http_errors import ProviderHTTPError
from ._provider_setup import configuration_kind, setting_to_check

T = TypeVar("T")


@dataclass
class RetryPolicy:
    attempts: int = 4
    base_delay: float = 0.5
    max_delay: float = 20.0
    multiplier: float = 2.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        """The default policy; OCCUSIM_LLM_RETRIES sets the number of attempts."""
        raw = os.environ.get("OCCUSIM_LLM_RETRIES")
        if raw is None or raw.strip() == "":
            return cls()
        try:
            attempts = int(raw)
        except ValueError:
            raise LLMError(f"OCCUSIM_LLM_RETRIES must be an integer number of attempts, got {raw!r}") from None
        return cls(attempts=max(1, attempts))

    def delay(self, failed_attempts: int) -> float:
        """Seconds to wait after `failed_attempts` failures; small jitter de-synchronises parallel callers."""
        base = min(self.max_delay, self.base_delay * self.multiplier ** (failed_attempts - 1))
        return base * (1.0 + random.uniform(0.0, 0.1))


def is_transient(error: BaseException) -> bool:
    """Rate limits, timeouts, connection failures, 5xx and malformed answers are worth retrying."""
    if isinstance(error, (TimeoutError, ProviderAnswerError)):
        return True
    if isinstance(error, ProviderHTTPError):
        return error.transient
    import openai

    if isinstance(error, (openai.RateLimitError, openai.APIConnectionError, openai.InternalServerError)):
        return True
    if isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError, openai.BadRequestError,
                          openai.NotFoundError, openai.UnprocessableEntityError)):
        return False
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status >= 500 or status == 429)


def _hint(error: BaseException, role: str) -> str:
    env = f"OCCUSIM_{role.upper()}_"
    if isinstance(error, ProviderHTTPError):
        refused, unknown = error.status_code in (401, 403), error.status_code == 404
    else:
        import openai

        refused = isinstance(error, (openai.AuthenticationError, openai.PermissionDeniedError))
        unknown = isinstance(error, openai.NotFoundError)
    if refused:
        return f"check {env}API_KEY or the provider's key variable, e.g. OPENAI_API_KEY"
    if unknown:
        return f"check the model name in {env}MODEL / OCCUSIM_MODEL and {env}API_BASE"
    if is_transient(error):
        return "transient failure; raise OCCUSIM_LLM_RETRIES or try again later"
    return ""


async def with_retries(call: Callable[[], Awaitable[T]], policy: RetryPolicy, model: str, role: str,
                       config: ModelConfig | None = None) -> T:
    """Run `call`, retrying transient provider failures; raise ProviderError when they persist, and
    ProviderConfigError at once for a failure of the configuration (naming the setting, from `config`)."""
    attempts = max(1, policy.attempts)
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except Exception as error:
            if isinstance(error, LLMError) and not isinstance(error, ProviderAnswerError):
                raise
            if not _is_provider_error(error):
                raise
            kind = configuration_kind(error)
            if kind is not None:
                setting = setting_to_check(kind, config or ModelConfig(model), role)
                raise ProviderConfigError(model, attempt, error, kind=kind, setting=setting) from error
            if not is_transient(error) or attempt == attempts:
                raise ProviderError(model, attempt, error, hint=_hint(error, role)) from error
            await asyncio.sleep(policy.delay(attempt))
    raise AssertionError("unreachable")


def _is_provider_error(error: BaseException) -> bool:
    if isinstance(error, (ProviderHTTPError, TimeoutError, ProviderAnswerError)):
        return True
    import openai

    return isinstance(error, (openai.OpenAIError, TimeoutError, ProviderAnswerError))
