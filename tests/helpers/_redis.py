"""The Redis server that tests of the shared counters use: OCCUSIM_TEST_REDIS_URL, or the local server."""

from __future__ import annotations

import os

REDIS_URL = os.environ.get("OCCUSIM_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
