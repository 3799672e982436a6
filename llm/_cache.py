"""SQLite response cache keyed by the request and its seed, so a re-run trial costs nothing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from occusim.environments import Usage

from ._completion import Completion, ToolCall
from ._errors import LLMError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS occusim_responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def default_cache_path() -> Path:
    configured = os.environ.get("OCCUSIM_CACHE_PATH")
    if configured:
        return Path(configured).expanduser()
    return Path("~/.cache/occusim/responses.sqlite").expanduser()


class ResponseCache:
    """Completions stored by request hash in one SQLite file; safe to share between tasks of one process."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path).expanduser() if path is not None else default_cache_path()
        self.hits = 0
        self.misses = 0
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None

    @staticmethod
    def key(
        model: str,
        api_base: str | None,
        messages: list[dict],
        tools: list[dict] | None,
        response_schema: dict | None,
        temperature: float | None,
        seed: int | None,
        max_tokens: int | None,
        *,
        cache_seed: int | None = None,
    ) -> str:
        """The request's hash. `seed` and `cache_seed` (a trial's seed the provider is not sent) tell the
        trials of one request apart, so that each is its own entry."""
        # None (the provider's default temperature) keys apart from every explicit value.
        sampling = None if temperature is None else float(temperature)
        request = [model, api_base, messages, tools, response_schema, sampling, seed, max_tokens]
        if cache_seed is not None:
            request.append({"cache_seed": cache_seed})
        canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    async def get(self, key: str) -> Completion | None:
        """The stored completion for `key` (marked cached), counting a hit or a miss."""
        payload = await asyncio.to_thread(self._read, key)
        if payload is None:
            self.misses += 1
            return None
        self.hits += 1
        return _decode(payload)

    async def put(self, key: str, completion: Completion) -> None:
        await asyncio.to_thread(self._write, key, completion.model, _encode(completion))

    async def clear(self) -> None:
        await asyncio.to_thread(self._execute, "DELETE FROM occusim_responses", ())

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                connection = sqlite3.connect(self.path, check_same_thread=False, timeout=30.0)
                # WAL lets several processes (e.g. parallel batch runs) share one cache file.
                connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(_SCHEMA)
                connection.commit()
            except (OSError, sqlite3.Error) as error:
                raise LLMError(
                    f"cannot open the response cache {self.path}: {error}; set OCCUSIM_CACHE_PATH to a writable "
                    "file or OCCUSIM_NO_CACHE=1"
                ) from error
            self._connection = connection
        return self._connection

    def _read(self, key: str) -> str | None:
        with self._lock:
            row = self._connect().execute(
                "SELECT payload FROM occusim_responses WHERE key = ?", (key,)
            ).fetchone()
        return row[0] if row else None

    def _write(self, key: str, model: str, payload: str) -> None:
        self._execute(
            "INSERT OR REPLACE INTO occusim_responses (key, model, payload, created_at) VALUES (?, ?, ?, ?)",
            (key, model, payload, time.time()),
        )

    def _execute(self, sql: str, params: tuple) -> None:
        with self._lock:
            connection = self._connect()
            connection.execute(sql, params)
            connection.commit()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}, hits={self.hits}, misses={self.misses})"


def _encode(completion: Completion) -> str:
    payload: dict[str, Any] = {
        "text": completion.text,
        "tool_calls": [asdict(call) for call in completion.tool_calls],
        "usage": completion.usage.model_dump(),
        "model": completion.model,
        "finish_reason": completion.finish_reason,
    }
    return json.dumps(payload, ensure_ascii=False)


def as_cached(completion: Completion) -> Completion:
    """`completion` as a cache hit reads it back: a copy that spent nothing."""
    return _decode(_encode(completion))


def _decode(payload: str) -> Completion:
    data = json.loads(payload)
    # A hit spends nothing, so the stored token counts are not charged to the caller again.
    usage = Usage(cost_usd=0.0, calls=0, cached_calls=1)
    return Completion(
        text=data["text"],
        tool_calls=[ToolCall(**call) for call in data["tool_calls"]],
        usage=usage,
        latency_ms=0.0,
        model=data["model"],
        cached=True,
        finish_reason=data.get("finish_reason"),
    )


_default_lock = threading.Lock()
_default_cache: ResponseCache | None = None
_default_disabled = False


def default_cache() -> ResponseCache | None:
    """The process-wide cache, or None when disabled by OCCUSIM_NO_CACHE=1 or set_default_cache(None)."""
    global _default_cache
    if _default_disabled or os.environ.get("OCCUSIM_NO_CACHE", "").strip().lower() in ("1", "true", "yes"):
        return None
    with _default_lock:
        if _default_cache is None:
            _default_cache = ResponseCache()
        return _default_cache


def set_default_cache(cache: ResponseCache | None) -> None:
    """Replace the process-wide cache; None turns default caching off (what `--no-cache` does)."""
    global _default_cache, _default_disabled
    with _default_lock:
        _default_cache = cache
        _default_disabled = cache is None
