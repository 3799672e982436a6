"""Imported by `occusim serve` subprocesses (OCCUSIM_SCRIPTED_MODELS): registers scripted/replay-world."""

from __future__ import annotations

from client_kit import ReplayWorld

REPLAY_WORLD = ReplayWorld(name="replay-world")
