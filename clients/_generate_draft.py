"""The scenario being generated: the parts the stages returned so far, put together as one `Scenario`, and which
stage owns each place of the scenario file (a problem found there goes back to that stage)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from occusim.environments import Scenario

from ._generate_parts import Brief, DraftTask, ReferencesPart, RubricsPart, TasksPart, ToolsPart

StageName = Literal["brief", "tools", "tasks", "rubrics", "references"]
STAGES: tuple[StageName, ...] = ("brief", "tools", "tasks", "rubrics", "references")

NO_RUBRIC = "(no rubric was written for this task)"
_TASK_PLACE = re.compile(r"^tasks\[\d+\](?:\.(?P<field>\w+))?")


def owning_stage(location: str) -> StageName:
    """The stage whose part holds `location` (`tasks[1].rubric.items[0]` -> rubrics)."""
    task = _TASK_PLACE.match(location)
    if task is not None:
        field = task.group("field")
        if field == "rubric":
            return "rubrics"
        if field == "reference_solution":
            return "references"
        return "tasks"
    if location.split(".")[0].split("[")[0] in (
        "tools",
        "state_descriptions",
        "state_schema",
        "initial_state",
        "collections",
    ):
        return "tools"
    return "brief"


@dataclass
class Draft:
    """What the author model has written so far for one occupation."""

    occupation: str
    category: str
    brief: Brief | None = None
    tools: ToolsPart | None = None
    tasks: TasksPart | None = None
    rubrics: RubricsPart | None = None
    references: ReferencesPart | None = None

    def part(self, stage: StageName) -> Brief | ToolsPart | TasksPart | RubricsPart | ReferencesPart | None:
        part: Brief | ToolsPart | TasksPart | RubricsPart | ReferencesPart | None = getattr(self, stage)
        return part

    def task_ids(self) -> list[str]:
        return [task.id for task in self.tasks.tasks] if self.tasks else []

    def scenario_data(self) -> dict[str, Any]:
        """The scenario file's data from every part written so far (a part not yet written is left out)."""
        data: dict[str, Any] = {"occupation": self.occupation, "category": self.category, "version": "1"}
        if self.brief is not None:
            data.update(
                id=self.brief.id,
                name=self.brief.name,
                domain=self.brief.domain,
                summary=self.brief.summary,
                rules=rules_text(self.brief),
            )
        if self.tools is not None:
            data.update(self.tools.model_dump(mode="json", exclude={"unsure"}, exclude_unset=True))
        if self.tasks is not None:
            data["tasks"] = [self._task_data(task) for task in self.tasks.tasks]
        return data

    def _task_data(self, task: DraftTask) -> dict[str, Any]:
        scenario_id = self.brief.id if self.brief else "draft"
        data: dict[str, Any] = {
            "id": f"{scenario_id}/{task.id}",
            "title": task.title,
            "instruction": task.instruction,
            "difficulty": task.difficulty,
        }
        if task.initial_state_patch:
            data["initial_state_patch"] = task.initial_state_patch
        rubric = (
            next((r.rubric for r in self.rubrics.rubrics if r.task == task.id), None)
            if self.rubrics
            else None
        )
        if rubric is not None:
            data["rubric"] = rubric.model_dump(mode="json", exclude_unset=True)
        else:
            # Before the rubrics stage, or when it gave this task none (a problem it is told of), a placeholder
            # plan keeps the task a task, so the rest can be checked and written.
            data["verification_plan"] = NO_RUBRIC
        reference = (
            next((r for r in self.references.references if r.task == task.id), None)
            if self.references
            else None
        )
        if reference is not None:
            data["reference_solution"] = [
                step.model_dump(mode="json", exclude_unset=True) for step in reference.reference_solution
            ]
        if task.final_answer:
            data["final_answer"] = task.final_answer
        return data

    def scenario(self) -> Scenario:
        """The whole scenario; pydantic's ValidationError when the parts do not make one."""
        return Scenario.model_validate(self.scenario_data())


def rules_text(brief: Brief) -> str:
    """The scenario's `rules`: each rule with its source, numbered as the review sheet numbers them."""
    return "\n".join(
        f"{number}. {rule.rule} (source: {rule.source})" for number, rule in enumerate(brief.rules, 1)
    )
