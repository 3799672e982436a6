"""Typed errors raised by the model gateway; each names the model and what to change."""

from __future__ import annotations

from typing import ClassVar

from occusim.environments import OccusimError

from ._redact import redact


class LLMError(OccusimError):
    """Base class for every failure of the model gateway."""

    # The work failed (a model or the infrastructure), not the user's input.
    exit_code: ClassVar[int] = 1


class ProviderAnswerError(LLMError):
    """The provider answered, but not with a usable chat completion: no choices, no message, fields of the
    wrong type, or cut off (`finish_reason` "length") before any content. Retried like an outage."""


class ProviderError(LLMError):
    """The model provider failed (after retries where the failure was transient).

    `str(error)` is the operator's message: the provider's own text, secrets redacted. `summary` says only
    the HTTP status and the error type; it is what may be shown to agents and stored with episodes.
    """

    def __init__(self, model: str, attempts: int, cause: BaseException, *, hint: str = "") -> None:
        self.model = model
        self.attempts = attempts
        self.cause = cause
        status = getattr(cause, "status_code", None)
        self.status: int | None = status if isinstance(status, int) else None
        self.error_type = type(cause).__name__
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        shown = f"HTTP {self.status} {self.error_type}" if self.status is not None else self.error_type
        self.summary = f"{shown} after {tries}"
        message = f"model {model!r} failed after {tries}: {self.error_type}: {redact(str(cause))}"
        if hint:
            message += f" ({hint})"
        super().__init__(message)


class LLMOutputError(LLMError):
    """The model answered, but not in the shape the caller asked for (e.g. no JSON object)."""

    def __init__(self, message: str, text: str = "") -> None:
        self.text = text
        if text:
            excerpt = text if len(text) <= 200 else text[:200] + "..."
            message = f"{message}; model output began: {excerpt!r}"
        super().__init__(message)


class ProviderConfigError(ProviderError):
    """The provider cannot be used as configured: the connection was refused, the host is unknown, the key is
    missing or refused (401/403), or the model is unknown. Never retried: a run stops at the first one.

    `kind` says which of these it was; `setting` names what to check: the endpoint URL and the variable that
    sets it, or the key's variable. `summary` (what agents may see) carries the kind, never the URL.
    """

    def __init__(self, model: str, attempts: int, cause: BaseException, *, kind: str, setting: str) -> None:
        super().__init__(model, attempts, cause, hint=f"{CONFIGURATION_ERROR}, {kind}: {setting}")
        self.kind = kind
        self.setting = setting
        self.summary = f"{self.summary}; {CONFIGURATION_ERROR}: {kind}"


# The words a configuration error's summary carries, by which a recorded step's error is recognised as one.
CONFIGURATION_ERROR = "configuration error"
