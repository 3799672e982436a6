"""The five stages of `occusim generate`: what each asks the author model for, and the checks its part must pass
before the next stage starts (the part's model, then the scenario assembled so far, validated as a file is)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from occusim.environments import Catalog, format_location, validate_scenario
from occusim.judge import audit_catalog_rubrics

from ._generate_draft import Draft, StageName, owning_stage
from ._generate_parts import Brief, Part, ReferencesPart, RubricsPart, TasksPart, ToolsPart

SYSTEM_PROMPT = """\
You write scenario files for occusim, a benchmark in which an AI agent stands in for a professional and works \
through tools whose answers a language model simulates from the scenario's rules and state. A good scenario is \
faithful to the occupation's real rules and catches an agent that works carelessly. Answer with one JSON object \
that matches the JSON Schema you are given, and nothing else."""

_BRIEF = """\
Write the brief of a scenario in which the agent is a {occupation} ({category}).
- rules: the occupation's real rules that decide the work here, each stated so that a simulator can apply it, \
with its source (regulation, standard or manual and the section) and every number it states.
- hidden_fields: facts the agent is not told and must look up in the records with a tool.
- traps: mistakes a careless professional makes here, each lying in the data: a conflicting record, a \
superseded rule version, a unit mismatch, a stale document.
- unsure: whatever you are not certain of (a figure, a section number, a rule that differs by jurisdiction)."""

_TOOLS = """\
Design the tools and the state of this scenario.
- tools: each with an object input_schema (required arguments named), an output_schema, `read_only: true` if \
it only reads, else `read_only: false` and `writes`: the JSON Pointers of the state parts it may change.
- state_schema: a JSON Schema of the whole state; state_descriptions: one line per top-level state key.
- initial_state: records keyed by their ids, satisfying state_schema, holding the brief's hidden fields."""

_TASKS = """\
Write {count} tasks set in this state, at difficulty 1 to 3 (each level at least once when there are three or more).
- instruction: a normal request from a colleague or client; it must not give the trap away.
- initial_state_patch: a JSON merge patch on the initial state that puts the task's trap in the data.
- trap: what the trap is and which record carries it.
- final_answer: what a careful professional reports at the end."""

_RUBRICS = """\
Write the rubric of every task (`task`: the task's short id).
- items of kind `state` (checks on the final state: pointer, op, value), `tool_call` (a tool was called, with \
arguments, before or after another) and `llm` (yes/no checks, in words, on the agent's final answer).
- `critical: true` on each item without which the task fails (at least one per task); `guard: true` on state \
items that hold at the start and must stay true (the trap's record left unchanged).
- lists are checked whatever their order: ops `any`, `none`, `count` with `match`, not list positions.
- every write of a correct solution is checked by an item, so that leaving it out fails the task; no item \
other than a guard may already be true in the task's starting state.
- exemplars: for each llm item, a passing excerpt and a near miss that fails, each with its verdict and why."""

_REFERENCES = """\
Write the golden solution of every task (`task`: the task's short id): the calls a careful professional makes, \
in order.
- arguments valid against the tool's input_schema; observation valid against its output_schema and consistent \
with the state and the rules; state_patch: RFC 6902 operations (empty for reads) within the tool's `writes`.
- the state after the last step passes every item of the task's rubric.
- `optional` (saying why) only on a write that the task passes without."""

Checker = Callable[[Any, Draft, int], list[str]]


@dataclass(frozen=True)
class Stage:
    """One model call's worth of the scenario: its part's model, what to ask, how to check the answer."""

    name: StageName
    part: type[BaseModel]
    instructions: str
    check: Checker

    def prompt(self, draft: Draft, task_count: int) -> str:
        return self.instructions.format(
            occupation=draft.occupation, category=draft.category, count=task_count
        )

    def response_schema(self, draft: Draft | None = None, task_count: int | None = None) -> dict[str, Any]:
        """The part's JSON Schema; given the draft, its list of tasks (or of their rubrics or references) has
        exactly as many entries as there are tasks, so that constrained decoding writes no more and no fewer."""
        schema = self.part.model_json_schema()
        if draft is None:
            return schema
        per_task = self.name in ("rubrics", "references")
        count = task_count if self.name == "tasks" else len(draft.task_ids()) if per_task else None
        if count:
            schema["properties"][self.name] |= {"minItems": count, "maxItems": count}
        return schema

    def with_part(self, draft: Draft, part: Part) -> Draft:
        """`draft` with this stage's part replaced by `part`."""
        changed = replace(draft)
        setattr(changed, self.name, part)
        return changed


def assembly_problems(draft: Draft, stage: StageName) -> list[str]:
    """The problems of the scenario assembled from `draft` that lie in `stage`'s part, as `place: message`."""
    try:
        scenario = draft.scenario()
    except ValidationError as error:
        found = [(format_location(e["loc"]), e["msg"]) for e in error.errors()]
        # A problem of the whole scenario (no place) is shown to the stage whose part was just added.
        return [
            f"{place or '(scenario)'}: {message}"
            for place, message in found
            if not place or owning_stage(place) == stage
        ]
    errors = validate_scenario(scenario, "draft")
    if stage == "rubrics":
        catalog = Catalog()
        catalog.add(scenario, "draft")
        errors.extend(audit_catalog_rubrics(catalog))
    return [f"{error.location}: {error.message}" for error in errors if owning_stage(error.location) == stage]


def _check_brief(part: Brief, draft: Draft, task_count: int) -> list[str]:
    return assembly_problems(draft, "brief")


def _check_tools(part: ToolsPart, draft: Draft, task_count: int) -> list[str]:
    return assembly_problems(draft, "tools")


def _check_tasks(part: TasksPart, draft: Draft, task_count: int) -> list[str]:
    problems = []
    if len(part.tasks) != task_count:
        problems.append(f"tasks: {task_count} tasks were asked for, the answer has {len(part.tasks)}")
    ids = [task.id for task in part.tasks]
    problems += [f"tasks: the id {i!r} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    levels = {task.difficulty for task in part.tasks}
    wanted = set(range(1, min(task_count, 3) + 1))
    if task_count >= 3 and levels != wanted:
        problems.append(f"tasks: difficulties {sorted(levels)}; use each of 1, 2 and 3 at least once")
    return problems + assembly_problems(draft, "tasks")


def _covers(kind: str, named: list[str], draft: Draft) -> list[str]:
    """Problems when `named` (the tasks a part answers for) is not each task of stage 3 exactly once."""
    expected = draft.task_ids()
    problems = [f"{kind}: no entry for task {task!r}" for task in expected if task not in named]
    problems += [f"{kind}: task {task!r} is not one of {expected}" for task in named if task not in expected]
    problems += [
        f"{kind}: task {t!r} has more than one entry"
        for t in sorted({t for t in named if named.count(t) > 1})
    ]
    return problems


def _check_rubrics(part: RubricsPart, draft: Draft, task_count: int) -> list[str]:
    problems = _covers("rubrics", [entry.task for entry in part.rubrics], draft)
    for entry in part.rubrics:
        if not any(item.critical for item in entry.rubric.items):
            problems.append(
                f"rubrics: task {entry.task!r} has no critical item; mark the item the task hinges on"
            )
    return problems + assembly_problems(draft, "rubrics")


def _check_references(part: ReferencesPart, draft: Draft, task_count: int) -> list[str]:
    return _covers("references", [entry.task for entry in part.references], draft) + assembly_problems(
        draft, "references"
    )


STAGE_LIST: tuple[Stage, ...] = (
    Stage("brief", Brief, _BRIEF, _check_brief),
    Stage("tools", ToolsPart, _TOOLS, _check_tools),
    Stage("tasks", TasksPart, _TASKS, _check_tasks),
    Stage("rubrics", RubricsPart, _RUBRICS, _check_rubrics),
    Stage("references", ReferencesPart, _REFERENCES, _check_references),
)
STAGE_BY_NAME = {stage.name: stage for stage in STAGE_LIST}


def context_json(draft: Draft) -> str:
    """The scenario written so far, as the next stage reads it."""
    data = draft.scenario_data()
    if draft.tasks is not None:
        traps = {task.id: task.trap for task in draft.tasks.tasks}
        for task in data.get("tasks", []):
            task["trap"] = traps.get(task["id"].rpartition("/")[2])
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
