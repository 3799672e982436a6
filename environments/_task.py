"""The task format: an instruction, its starting state, its rubric and a golden reference solution."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic.config import JsonDict

from ._errors import inconsistent
from ._rubric import Rubric

TASK_ID = r"^[a-z0-9][a-z0-9\-_./]*$"


class ReferenceStep(BaseModel):
    """One golden tool call: the observation it returns and the state change it causes."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    observation: dict[str, Any]
    state_patch: list[dict[str, Any]] = Field(
        default_factory=list, description="RFC 6902 operations applied to the state by this call."
    )
    optional: str | None = Field(
        default=None,
        min_length=1,
        description="Why this write may be left out and the task still pass; without it, removing any write "
        "of the reference must fail the task (`occusim validate --discrimination`).",
    )


# The rule of `_something_to_judge`, stated in the JSON Schema too so the documents cannot accept what it refuses.
_SOMETHING_TO_JUDGE: JsonDict = {
    "anyOf": [
        {"required": ["rubric"], "properties": {"rubric": {"required": ["items"], "properties": {"items": {"minItems": 1}}}}},
        {"required": ["verification_plan"], "properties": {"verification_plan": {"type": "string", "minLength": 1}}},
    ]
}


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_SOMETHING_TO_JUDGE)

    id: str = Field(pattern=TASK_ID)
    scenario: str | None = Field(default=None, description="Scenario id; implied by the file that holds the task.")
    title: str
    instruction: str = Field(description="What the agent is told.")
    difficulty: int = Field(ge=1, le=3)
    initial_state_patch: dict[str, Any] = Field(
        default_factory=dict, description="RFC 7396 JSON merge patch on the scenario's initial state."
    )
    rubric: Rubric = Field(default_factory=Rubric)
    verification_plan: str | None = Field(
        default=None, description="Free-text checklist, judged as one binary item."
    )
    reference_solution: list[ReferenceStep] = Field(default_factory=list)
    final_answer: str | None = Field(default=None, description="The expected final answer of the reference solution.")
    max_steps: int = Field(default=30, ge=1, le=500)

    @model_validator(mode="after")
    def _something_to_judge(self) -> Task:
        if not self.rubric.items and not self.verification_plan:
            raise inconsistent("a task needs rubric items, a verification_plan, or both")
        return self
