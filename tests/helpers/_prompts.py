"""Read a tracked-mode world-model prompt back: the current state and the call being simulated."""

from __future__ import annotations

import json
import re
from typing import Any

_STATE_BLOCK = re.compile(r"### Current state\n```json\n(.*?)\n```", re.S)
_CALL_LINE = re.compile(r"### Call \d+\n(\{.*\})")


def tracked_call(prompt: str) -> tuple[str, dict[str, Any], dict[str, Any]] | None:
    """(tool, arguments, state) of a tracked-mode prompt, or None when `prompt` is not one."""
    state, call = _STATE_BLOCK.search(prompt), _CALL_LINE.search(prompt)
    if state is None or call is None:
        return None
    parsed = json.loads(call.group(1))
    return parsed["name"], parsed["arguments"], json.loads(state.group(1))
