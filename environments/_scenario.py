"""The scenario format: an occupation's tools, rules and initial state, with the tasks set in it."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._categories import Category
from ._collections import Collection
from ._errors import inconsistent
from ._task import Task

SLUG = r"^[a-z0-9][a-z0-9\-_]*$"
TOOL_NAME = r"^[A-Za-z_][A-Za-z0-9_\-]{0,63}$"


class Tool(BaseModel):
    """One simulated tool, described to the agent by its JSON Schemas."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME)
    description: str
    input_schema: dict[str, Any] = Field(description="JSON Schema of the arguments (an object schema).")
    output_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema every observation of this tool must satisfy."
    )
    example_output: Any = None
    read_only: bool | None = Field(
        default=None,
        description="True: the tool only reads, so its calls never change the state (tracked mode requires an "
        "empty patch). False: it may change the state. None: not declared.",
    )
    read_only_inferred: bool = Field(
        default=False,
        description="read_only was inferred from the tool's name and description (imported OccuBench tools), "
        "not declared by the scenario's author.",
    )
    writes: list[str] | None = Field(
        default=None,
        description="JSON Pointers (e.g. /patients, /log) of the parts of the state this tool may change; a "
        "patch must stay at or below one of them. None: anywhere, unless read_only.",
    )

    def may_write(self, path: str) -> bool:
        """Whether a patch of this tool may change the state at `path` (its `writes`; read-only: nowhere)."""
        if self.read_only:
            return False
        if self.writes is None:
            return True
        return any(allowed.rstrip("/") == "" or path == allowed.rstrip("/") or path.startswith(allowed.rstrip("/") + "/")
                   for allowed in self.writes)


class Scenario(BaseModel):
    """An occupational environment. One YAML file holds one scenario and its tasks."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=SLUG)
    name: str
    category: Category
    domain: str
    occupation: str = Field(description="The human role the agent stands in for.")
    summary: str
    version: str = "1"
    rules: str = Field(
        description="Domain rules for the simulator: formulas, thresholds, error shapes, prerequisites, visibility."
    )
    sources: str | None = Field(
        default=None,
        description="Where the rules come from (regulations, standards, manuals, with their sections and editions), "
        "for a reviewer to check each rule and number against; never shown to the agent or the world model.",
    )
    tools: list[Tool] = Field(min_length=1)
    state_descriptions: dict[str, str]
    initial_state: dict[str, Any]
    state_schema: dict[str, Any] | None = Field(
        default=None, description="JSON Schema the tracked state must keep satisfying."
    )
    collections: list[Collection] = Field(
        default_factory=list,
        description="The state's record collections, each with its identity key, references and derived fields; "
        "the per-step audit resolves observed records through them (inferred from the initial state when empty).",
    )
    simulator_prompt: str | None = Field(
        default=None,
        description="A verbatim simulator prompt (imported OccuBench environments) used by the history mode.",
    )
    tasks: list[Task] = Field(default_factory=list)

    @model_validator(mode="after")
    def _link_tasks(self) -> Scenario:
        names = [t.name for t in self.tools]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise inconsistent(f"duplicate tool names: {sorted(duplicates)}")
        for task in self.tasks:
            if task.scenario is None:
                task.scenario = self.id
            elif task.scenario != self.id:
                raise inconsistent(f"task {task.id!r} names scenario {task.scenario!r}, but sits in {self.id!r}")
        return self

    def tool(self, name: str) -> Tool | None:
        return next((t for t in self.tools if t.name == name), None)
