"""Registers `scripted/replay-world`; `occusim serve` processes import it through OCCUSIM_SCRIPTED_MODELS."""

from __future__ import annotations

from ._replay import ReplayWorld

REPLAY_WORLD = ReplayWorld(name="replay-world")
