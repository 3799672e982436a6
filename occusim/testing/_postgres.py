"""The PostgreSQL database that store tests use: OCCUSIM_TEST_POSTGRES_URL, or the local server."""

from __future__ import annotations

import os

POSTGRES_URL = os.environ.get("OCCUSIM_TEST_POSTGRES_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/test")
