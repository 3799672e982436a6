"""Typed errors raised by the model gateway; each names the model and what to change."""

from __future__ import annotations


class LLMError(Exception):
    """Base class for every failure of the model gateway."""


class ProviderError(LLMError):
    """The model provider failed (after retries where the failure was transient)."""

    def __init__(self, model: str, attempts: int, cause: BaseException, *, hint: str = "") -> None:
        self.model = model
        self.attempts = attempts
        self.cause = cause
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        message = f"model {model!r} failed after {tries}: {type(cause).__name__}: {cause}"
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
