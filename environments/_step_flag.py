"""The audit's findings on one simulated step: what kind of infidelity, where, and why."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class FlagKind(StrEnum):
    """What a step's audit found wrong with the simulator's answer (defined in docs/metrics.md)."""

    fabricated_entity = "fabricated_entity"
    omission = "omission"
    invented_field = "invented_field"
    value_mismatch = "value_mismatch"
    read_only_change = "read_only_change"
    patch_contradiction = "patch_contradiction"
    out_of_bounds_write = "out_of_bounds_write"
    created_id_mismatch = "created_id_mismatch"
    error_contradiction = "error_contradiction"
    unrecorded_write = "unrecorded_write"
    wrong_record = "wrong_record"


class StepFlag(BaseModel):
    """One finding of the per-step audit, stored on the step record."""

    model_config = ConfigDict(extra="forbid")

    kind: FlagKind
    detail: str = Field(description="One line a reader can act on: which entity, field or operation, and why.")
    path: str | None = Field(
        default=None,
        description="Where: a JSON Pointer into the observation, or into the state for a patch operation.",
    )
