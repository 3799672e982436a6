"""Lazy litellm import: it takes seconds, so only model calls pay for it, and never on the event loop."""

from __future__ import annotations

import asyncio
import os
import threading
import warnings
from types import ModuleType

from ._local import LOCAL_ALIAS
from ._scripted import SCRIPTED_LITELLM_MODEL

# Scripted and local answers cost nothing. Registering them at zero price lets litellm's own per-call
# cost bookkeeping hit its price map directly instead of running its fallback model-name search each call.
_ZERO_PRICE = {
    "input_cost_per_token": 0.0,
    "output_cost_per_token": 0.0,
    "cache_creation_input_token_cost": 0.0,
    "cache_read_input_token_cost": 0.0,
    "litellm_provider": "openai",
    "mode": "chat",
}

_lock = threading.Lock()
_module: ModuleType | None = None


def load_litellm() -> ModuleType:
    global _module
    with _lock:
        if _module is None:
            # The bundled price map avoids a network fetch at import time.
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
            # litellm's own TypedDicts trip a pydantic warning that users can do nothing about.
            warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier", category=UserWarning)
            import litellm

            litellm.suppress_debug_info = True
            litellm.telemetry = False
            litellm.register_model({SCRIPTED_LITELLM_MODEL: _ZERO_PRICE, LOCAL_ALIAS: _ZERO_PRICE})
            _module = litellm
        return _module


async def load_litellm_async() -> ModuleType:
    if _module is not None:
        return _module
    return await asyncio.to_thread(load_litellm)
