"""Prices per token from litellm's bundled price map, read as data (litellm itself is not imported), so that
the lean path charges what litellm would."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
from functools import cache
from pathlib import Path
from typing import Any

_PRICE_FILE = "model_prices_and_context_window_backup.json"
_lock = threading.Lock()
_map: dict[str, Any] | None = None
_reading = False


def _price_map() -> dict[str, Any]:
    global _map
    with _lock:
        if _map is None:
            spec = importlib.util.find_spec("litellm")
            folders = list(spec.submodule_search_locations or []) if spec is not None else []
            found: dict[str, Any] = {}
            for folder in folders:
                path = Path(folder) / _PRICE_FILE
                if path.is_file():
                    found = json.loads(path.read_text(encoding="utf-8"))
                    break
            _map = found
        return _map


def read_prices_soon() -> None:
    """Start reading the price map in a thread, once: called as a priced request goes out, so that the read
    (about 40 ms of CPU) overlaps the wait for the answer instead of following it."""
    global _reading
    if _map is None and not _reading:
        _reading = True  # a second reader started by a race only waits on the lock
        threading.Thread(target=_price_map, name="occusim-read-prices", daemon=True).start()


async def load_prices() -> None:
    """Read the price map off the event loop (once per process)."""
    if _map is None:
        await asyncio.to_thread(_price_map)


@cache
def price_of(model: str) -> dict[str, float] | None:
    """Per-token prices of `model` as sent ("gpt-4.1"), or None when the map has no chat price for it."""
    entry = _price_map().get(model)
    if not isinstance(entry, dict):
        return None
    prompt, completion = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if not isinstance(prompt, (int, float)) or not isinstance(completion, (int, float)):
        return None
    cached = entry.get("cache_read_input_token_cost")
    return {
        "prompt": float(prompt),
        "completion": float(completion),
        "cached": float(cached) if isinstance(cached, (int, float)) else float(prompt),
    }


def listed_cost(model: str, prompt_tokens: int, completion_tokens: int, cached_tokens: int) -> float | None:
    """What litellm charges for one call to `model`: cached prompt tokens at the cache-read price."""
    price = price_of(model)
    if price is None:
        return None
    cached = min(max(cached_tokens, 0), prompt_tokens)
    return (
        (prompt_tokens - cached) * price["prompt"]
        + cached * price["cached"]
        + completion_tokens * price["completion"]
    )
