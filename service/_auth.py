"""Who may call the hosted service: tenants by API key, and each episode's MCP endpoint by its own token.

Secrets are compared in constant time and never kept in the clear: API keys are held as SHA-256
digests, and episode tokens are not stored at all but recomputed as an HMAC of the episode id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

TOKEN_PREFIX = "ept_"


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeys:
    """Tenants by API key. Holds only digests; a lookup compares against every digest in constant time."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._digests = [(tenant, hashlib.sha256(key.encode()).digest()) for tenant, key in keys.items()]

    def __len__(self) -> int:
        return len(self._digests)

    def has_tenant(self, tenant: str) -> bool:
        return any(name == tenant for name, _ in self._digests)

    def tenant(self, key: str | None) -> str | None:
        """The tenant whose API key this is, or None."""
        if not key:
            return None
        presented = hashlib.sha256(key.encode()).digest()
        found = None
        # No early exit: the time taken does not depend on which key (if any) matched.
        for tenant, digest in self._digests:
            if hmac.compare_digest(presented, digest):
                found = tenant
        return found


class EpisodeTokens:
    """Per-episode bearer tokens, derived from the episode id with a service key (HMAC-SHA256).

    Any process holding the same key can verify a token, so the processes sharing one store can all
    serve every episode, and nothing secret is written to the store.
    """

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("the episode token key must be at least 16 bytes; set a longer token_secret")
        self._key = key

    def issue(self, episode_id: str) -> str:
        mac = hmac.new(self._key, episode_id.encode(), hashlib.sha256).digest()
        return TOKEN_PREFIX + base64.urlsafe_b64encode(mac).decode().rstrip("=")

    def verify(self, episode_id: str, token: str | None) -> bool:
        if not token:
            return False
        return hmac.compare_digest(token.encode(), self.issue(episode_id).encode())


@dataclass(frozen=True)
class ViewerGrant:
    """What a valid viewer link lets its holder see: one tenant's episodes (every episode when None)."""

    tenant: str | None
    expires_at: int


class ViewerLinks:
    """Short-lived signed links to the episode viewer: a tenant and an expiry, signed with the service key.

    The signature is over a domain-separated message, so a link can never pass for an episode token.
    """

    def __init__(self, key: bytes, *, clock: Callable[[], float] = time.time) -> None:
        self._key = key
        self._clock = clock

    def issue(self, tenant: str | None, ttl_seconds: int) -> tuple[str, int]:
        """A token for `tenant` valid for `ttl_seconds`, and when it expires (Unix seconds)."""
        expires_at = int(self._clock()) + ttl_seconds
        payload = _b64(json.dumps({"tenant": tenant, "exp": expires_at}, separators=(",", ":")).encode())
        return f"{payload}.{self._sign(payload)}", expires_at

    def verify(self, token: str | None) -> ViewerGrant | None:
        """The grant of a well-signed, unexpired token; None for anything else."""
        if not token or token.count(".") != 1:
            return None
        payload, signature = token.split(".")
        if not hmac.compare_digest(signature.encode(), self._sign(payload).encode()):
            return None
        try:
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except ValueError:
            return None
        tenant, expires_at = claims.get("tenant"), claims.get("exp")
        if not isinstance(expires_at, int) or not (tenant is None or isinstance(tenant, str)):
            return None
        if expires_at <= self._clock():
            return None
        return ViewerGrant(tenant, expires_at)

    def _sign(self, payload: str) -> str:
        return _b64(hmac.new(self._key, b"occusim viewer link\0" + payload.encode(), hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")
