"""What each stage of `occusim generate` asks the author model for: one part of the scenario format each, built
from the format's own models (`Tool`, `Rubric`, `ReferenceStep`), so that a part that validates here is a
piece of a scenario file."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from occusim.environments import ReferenceStep, Rubric, Tool

SLUG = r"^[a-z0-9][a-z0-9\-]*$"


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid")

    unsure: list[str] = Field(
        default_factory=list,
        description="What you are not sure of in this part (a rule's exact figure, a form's field name, a "
        "threshold that varies by jurisdiction): each goes on the reviewer's sheet.",
    )


class CitedRule(BaseModel):
    """One rule of the occupation as the simulator must apply it, with where it comes from."""

    model_config = ConfigDict(extra="forbid")

    rule: str = Field(min_length=1, description="The rule, stated so that a simulator can apply it.")
    source: str = Field(
        min_length=1,
        description="Where it comes from: regulation, standard or manual, and its "
        "section (e.g. '21 CFR 1306.22(a)').",
    )
    numbers: list[str] = Field(
        default_factory=list,
        description="Every number, threshold or limit the rule states, "
        "each as written in the source (e.g. '5 refills', '6 months').",
    )


class Brief(_Part):
    """Stage 1: the occupation's rules with citations, the hidden fields and the traps."""

    id: str = Field(pattern=SLUG, description="The scenario's id: lowercase words joined by hyphens.")
    name: str = Field(
        min_length=1, description="A short title of the workplace, e.g. 'Prescription refill desk'."
    )
    domain: str = Field(min_length=1)
    summary: str = Field(min_length=1, description="One sentence: what the professional does here.")
    rules: list[CitedRule] = Field(min_length=1)
    hidden_fields: list[str] = Field(
        min_length=1, description="Facts the agent is not told and must look up with a tool (state fields)."
    )
    traps: list[str] = Field(
        min_length=1,
        description="Mistakes a careless professional makes here, each lying in the data "
        "(a conflicting record, a superseded rule version, a unit mismatch, a stale document).",
    )


class ToolsPart(_Part):
    """Stage 2: the tools, the state's schema and descriptions, and an initial state consistent with them."""

    tools: list[Tool] = Field(
        min_length=1,
        description="Tools with JSON Schemas; declare `read_only` on every "
        "tool and `writes` (JSON Pointers into the state) on every tool that writes.",
    )
    state_descriptions: dict[str, str] = Field(min_length=1, description="One entry per top-level state key.")
    state_schema: dict[str, Any] = Field(description="JSON Schema the state must keep satisfying.")
    initial_state: dict[str, Any] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _first_of_each_name(cls, data: Any) -> Any:
        """Keep the first tool of each name. Small models repeat a tool in an otherwise sound answer, again
        when told: the repeat is dropped and named in `unsure`, so that the reviewer sees it."""
        if not isinstance(data, dict) or not isinstance(data.get("tools"), list):
            return data
        kept: list[Any] = []
        seen: set[str] = set()
        dropped: list[str] = []
        for tool in data["tools"]:
            name = tool.get("name") if isinstance(tool, dict) else None
            if isinstance(name, str):
                if name in seen:
                    dropped.append(name)
                    continue
                seen.add(name)
            kept.append(tool)
        if not dropped:
            return data
        given = data.get("unsure")
        unsure: list[Any] = given if isinstance(given, list) else []
        notes = [f"the tool {name!r} was given more than once; only its first definition was kept" for name in
                 sorted(set(dropped))]
        return {**data, "tools": kept, "unsure": [*unsure, *notes]}


class DraftTask(BaseModel):
    """One task of stage 3, before its rubric and reference solution exist."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=SLUG, description="The task's short id; the scenario's id is put in front of it.")
    title: str = Field(min_length=1)
    instruction: str = Field(
        min_length=1, description="What the agent is told; it must not give the trap away."
    )
    difficulty: int = Field(ge=1, le=3)
    initial_state_patch: dict[str, Any] = Field(
        default_factory=dict,
        description="RFC 7396 merge patch on the initial state: where the trap's data lies.",
    )
    trap: str = Field(min_length=1, description="The trap, and the record in the data that carries it.")
    final_answer: str | None = Field(default=None, description="What a correct agent reports at the end.")


class TasksPart(_Part):
    """Stage 3: the tasks, at difficulty 1 to 3, each with a trap in the data."""

    tasks: list[DraftTask] = Field(min_length=1)


class TaskRubric(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="The task's short id, as in stage 3.")
    rubric: Rubric

    @model_validator(mode="after")
    def _has_items(self) -> TaskRubric:
        if not self.rubric.items:
            raise ValueError(f"the rubric of task {self.task!r} has no items")
        return self


class RubricsPart(_Part):
    """Stage 4: a rubric for each task (critical and guard items, order-insensitive checks) with exemplars."""

    rubrics: list[TaskRubric] = Field(min_length=1)


class TaskReference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="The task's short id, as in stage 3.")
    reference_solution: list[ReferenceStep] = Field(min_length=1)


class ReferencesPart(_Part):
    """Stage 5: the golden solution of each task, as steps with observations and state patches."""

    references: list[TaskReference] = Field(min_length=1)


Part = Brief | ToolsPart | TasksPart | RubricsPart | ReferencesPart
