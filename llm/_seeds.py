"""Seeds derived from a trial's seed, one per request that must be its own sample (a vote, a retry)."""

from __future__ import annotations

import hashlib


def derived_seed(seed: int, *parts: object) -> int:
    """A 31-bit seed for the request named by `parts` within the trial seeded `seed`.

    Distinct parts give independent seeds, and the same parts always give the same seed, so a re-run of a
    trial asks (and caches) exactly what the first run did.
    """
    key = ":".join(str(part) for part in (seed, *parts))
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big") & 0x7FFFFFFF
