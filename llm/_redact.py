"""Secrets taken out of provider error text before it reaches a log or a message."""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"

# Credentials as providers echo them back: bearer tokens, "API key provided: ...", key=value pairs, and
# the key shapes of the common providers (sk-..., AIza..., hf_..., gsk_...).
_PATTERNS = [
    re.compile(r"(?i)(\bbearer\s+)[^\s\"',;]+"),
    re.compile(r"(?i)(api[ _-]?key provided:\s*(?:bearer\s+)?)(?!\[redacted\]|bearer\s)[^\s\"',;]+"),
    re.compile(r"(?i)(\b(?:api[_-]?key|access[_-]?token|token|secret|password|authorization)[\"']?\s*[:=]\s*[\"']?)"
               r"(?!\[redacted\])[^\s\"',;&]+"),
    re.compile(r"()\b(?:sk|rk|pk)-[A-Za-z0-9_*.-]{6,}"),
    re.compile(r"()\b(?:AIza[0-9A-Za-z_-]{20,}|hf_[A-Za-z0-9]{10,}|gsk_[A-Za-z0-9]{10,}|xai-[A-Za-z0-9]{10,})"),
]
_SECRET_NAME = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD)$")
_MIN_SECRET = 8


def redact(text: str, secrets: tuple[str, ...] = ()) -> str:
    """`text` with credentials replaced by "[redacted]": the given `secrets`, the values of environment
    variables named like secrets (…_KEY, …_TOKEN, …_SECRET, …_PASSWORD) and credential-shaped words."""
    known = [s for s in (*secrets, *_environment_secrets()) if len(s) >= _MIN_SECRET]
    for secret in sorted(known, key=len, reverse=True):
        text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda match: match.group(1) + REDACTED, text)
    return text


def _environment_secrets() -> list[str]:
    return [value for name, value in os.environ.items() if _SECRET_NAME.search(name) and value.strip()]
