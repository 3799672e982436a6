"""Every process sharing a store signs episode tokens with one key: the first to start stores a keyed
fingerprint of its key there, and a process started with another key refuses to start."""

from __future__ import annotations

import hashlib
import hmac

from occusim.server import Store

from ._config import ConfigError

SETTING = "token_key_fingerprint"


def key_fingerprint(key: bytes) -> str:
    """An HMAC of a fixed message under the key: equal for equal keys, and telling nothing of the key."""
    return hmac.new(key, b"occusim episode token key", hashlib.sha256).hexdigest()


async def check_shared_key(store: Store, key: bytes) -> None:
    """Raise ConfigError when the store's processes sign tokens with another key than `key`."""
    stored = await store.claim_setting(SETTING, key_fingerprint(key))
    if not hmac.compare_digest(stored, key_fingerprint(key)):
        raise ConfigError(
            f"the processes sharing {store!r} sign episode tokens with another key than this one, and each would "
            "refuse the others' tokens: set token_secret in --config (or OCCUSIM_TOKEN_SECRET) to the value they "
            "were started with"
        )
