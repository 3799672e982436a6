"""Who may call the hosted service: tenants by API key, and each episode's MCP endpoint by its own token.

Secrets are compared in constant time and never kept in the clear: API keys are held as SHA-256
digests, and episode tokens are not stored at all but recomputed as an HMAC of the episode id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping

TOKEN_PREFIX = "ept_"


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


class ApiKeys:
    """Tenants by API key. Holds only digests; a lookup compares against every digest in constant time."""

    def __init__(self, keys: Mapping[str, str]) -> None:
        self._digests = [(tenant, hashlib.sha256(key.encode()).digest()) for tenant, key in keys.items()]

    def __len__(self) -> int:
        return len(self._digests)

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
