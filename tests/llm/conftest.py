"""Fixtures for gateway tests: an isolated default cache per test, and the shared local model."""

from __future__ import annotations

import asyncio

import pytest

from occusim.llm import ResponseCache, default_cache, set_default_cache, start_local_model


@pytest.fixture(autouse=True)
def isolated_default_cache(tmp_path, monkeypatch):
    """Point the process default cache at a fresh file so tests never share or touch ~/.cache."""
    monkeypatch.delenv("OCCUSIM_NO_CACHE", raising=False)
    monkeypatch.delenv("OCCUSIM_LLM_RETRIES", raising=False)
    previous = default_cache()
    cache = ResponseCache(tmp_path / "default-cache.sqlite")
    set_default_cache(cache)
    yield cache
    cache.close()
    set_default_cache(previous)


@pytest.fixture(scope="session")
def local_model() -> str:
    """The bundled local model, loaded once per test session (the server is a per-process singleton)."""
    asyncio.run(start_local_model("local"))
    return "local"
