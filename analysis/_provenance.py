"""What produced a run's episodes: protocol, occusim version, prompt versions and harness file hashes.

Recorded in run.json; a run folder is resumed only with the same provenance, so that one table never mixes
episodes of different prompts or code. What this checkout's provenance is: `occusim.clients.current_provenance`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from occusim.environments import ProtocolName

VERSION_LENGTH = 16


class Provenance(BaseModel):
    """How a run's episodes were produced; `protocol` and `harness_files` are the caller's to set."""

    model_config = ConfigDict(extra="forbid")

    protocol: ProtocolName = Field(default="native", description="native, or occubench (OccuBench's harness).")
    occusim_version: str = ""
    prompt_versions: dict[str, str] = Field(
        default_factory=dict, description="Role -> version (hash) of the prompt templates it was given.")
    harness_files: dict[str, str] = Field(
        default_factory=dict, description="OccuBench harness file path -> sha256, under --protocol occubench.")
    judge_settings: dict[str, Any] = Field(
        default_factory=dict, description="How the native judge samples and counts votes (OCCUSIM_JUDGE_*).")


def text_version(text: str | bytes) -> str:
    """A short version of a template: the start of its sha256 (line endings normalised)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    return hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()[:VERSION_LENGTH]


def provenance_changes(before: Provenance | None, after: Provenance | None) -> list[str]:
    """Each difference between two provenances, named field by field (and key by key)."""
    if before == after:
        return []
    if before is None or after is None:
        recorded = "not recorded (written by an older occusim)"
        return [f"provenance: {recorded if before is None else 'recorded'} -> "
                f"{recorded if after is None else 'recorded'}"]
    changes = []
    for name in ("protocol", "occusim_version"):
        if getattr(before, name) != getattr(after, name):
            changes.append(f"{name}: {getattr(before, name)!r} -> {getattr(after, name)!r}")
    for name in ("prompt_versions", "harness_files", "judge_settings"):
        old, new = getattr(before, name), getattr(after, name)
        for key in sorted(old.keys() | new.keys()):
            if old.get(key) != new.get(key):
                changes.append(f"{name}[{key}]: {old.get(key, 'absent')!r} -> {new.get(key, 'absent')!r}")
    return changes
