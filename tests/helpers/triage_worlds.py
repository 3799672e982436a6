"""Registers the triage world models; `occusim serve` processes import it through OCCUSIM_SCRIPTED_MODELS.

`scripted/triage` answers the triage scenario correctly; `scripted/triage-slow` does the same after
OCCUSIM_TEST_MODEL_DELAY seconds (default 1), to hold a call in flight, touching the file
OCCUSIM_TEST_MODEL_MARKER (when set) as the call starts.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from occusim.llm import scripted_model

from ._triage import TriageModel

_TRIAGE = TriageModel(name="triage")
TRIAGE_WORLD = _TRIAGE.model


async def _slow(messages: list[dict], request: dict) -> str:
    marker = os.environ.get("OCCUSIM_TEST_MODEL_MARKER")
    if marker:
        await asyncio.to_thread(Path(marker).touch)
    await asyncio.sleep(float(os.environ.get("OCCUSIM_TEST_MODEL_DELAY", "1")))
    return _TRIAGE(messages, request)


TRIAGE_SLOW_WORLD = scripted_model(_slow, name="triage-slow")
