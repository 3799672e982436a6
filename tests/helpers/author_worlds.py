"""Registers `scripted/author` (a sound author of the refill-desk scenario), `scripted/refill-world` (its golden
steps) and `scripted/misreading-world` (which misreads every step); `occusim generate` processes import it through
OCCUSIM_SCRIPTED_MODELS."""

from __future__ import annotations

from ._author import SOUND_PARTS, ScriptedAuthor, golden_replay_world

AUTHOR = ScriptedAuthor("author").model
REFILL_WORLD = golden_replay_world(
    "refill-world", SOUND_PARTS["references"]["references"][0]["reference_solution"]
)
MISREADING_WORLD = golden_replay_world(
    "misreading-world", SOUND_PARTS["references"]["references"][0]["reference_solution"], misread=10**9
)
