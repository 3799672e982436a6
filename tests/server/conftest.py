"""Fixtures for the server tests: a fresh SQLite store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from occusim.server import Store


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    """A fresh SQLite file store, as the server uses by default."""
    store = Store(tmp_path / "episodes.db")
    await store.init()
    yield store
    await store.close()
