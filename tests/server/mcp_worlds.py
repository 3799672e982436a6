"""Scripted world models for server processes started by the MCP tests (imported via OCCUSIM_SCRIPTED_MODELS).

`scripted/triage` answers the triage scenario of runtime_kit correctly; `scripted/triage-slow` does the
same after OCCUSIM_TEST_MODEL_DELAY seconds (default 1), to hold a call in flight, touching the file
OCCUSIM_TEST_MODEL_MARKER (when set) as the call starts.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from runtime_kit import TriageModel

from occusim.llm import scripted_model

TRIAGE = TriageModel(name="triage")


async def _slow(messages: list[dict], request: dict) -> str:
    if os.environ.get("OCCUSIM_TEST_MODEL_MARKER"):
        await asyncio.to_thread(Path(os.environ["OCCUSIM_TEST_MODEL_MARKER"]).touch)
    await asyncio.sleep(float(os.environ.get("OCCUSIM_TEST_MODEL_DELAY", "1")))
    return TRIAGE(messages, request)


scripted_model(_slow, name="triage-slow")
