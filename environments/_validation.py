"""Deep checks of loaded scenarios: JSON Schemas, reference solutions, state patches, pointers, descriptions.

The models check each field; these checks relate fields to each other (a step to its tool's schema, a
rubric pointer to the state the reference solution leaves behind).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jsonpointer import JsonPointer, unescape
from jsonschema import Draft202012Validator
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

from ._catalog import Catalog
from ._collections import collection_problems
from ._errors import ScenarioError, ScenarioErrors
from ._loader import BUNDLED_CATALOG, load_source, scenario_files
from ._occubench import OCCUBENCH_PREFIX
from ._rubric import StateItem, ToolCallItem
from ._scenario import Scenario, Tool
from ._schema_safety import local_validator
from ._state import PatchError, UnresolvedPointer, apply_json_patch, merge_patch, resolve_pointer
from ._task import Task

Location = list[str | int]


@dataclass
class ValidationReport:
    """What `validate_sources` loaded and every problem it found."""

    catalog: Catalog
    errors: list[ScenarioError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def summary(self) -> str:
        """`ok: 20 scenarios, 60 tasks, 0 errors` (or `failed: ...`)."""
        counts = (
            f"{_plural(len(self.catalog.scenarios), 'scenario')}, {_plural(len(self.catalog.tasks), 'task')}"
        )
        return f"{'ok' if self.ok else 'failed'}: {counts}, {_plural(len(self.errors), 'error')}"


def validate_sources(sources: Sequence[str | Path], *, bundled: bool = False) -> ValidationReport:
    """Load each source (files, folders, `occubench:PATH`) and check everything that loads.

    Files are loaded one by one, so a broken file does not hide the problems of its neighbours.
    """
    catalog = Catalog()
    report = ValidationReport(catalog)
    specs: list[str | Path] = list(sources)
    if bundled and BUNDLED_CATALOG.is_dir() and scenario_files(BUNDLED_CATALOG):
        specs.insert(0, BUNDLED_CATALOG)
    for spec in specs:
        for unit in _load_units(spec):
            try:
                loaded = load_source(unit)
            except ScenarioErrors as error:
                report.errors.extend(error.errors)
                continue
            for scenario, origin in loaded:
                report.errors.extend(catalog.add(scenario, origin))
    report.errors.extend(validate_catalog(catalog))
    return report


def _load_units(spec: str | Path) -> list[str | Path]:
    if str(spec).startswith(OCCUBENCH_PREFIX):
        return [spec]
    path = Path(spec)
    if path.is_dir():
        return list(scenario_files(path)) or [spec]
    return [spec]


def validate_catalog(catalog: Catalog) -> list[ScenarioError]:
    """Every cross-field problem of every scenario in the catalog, named by the file it came from."""
    errors: list[ScenarioError] = []
    for scenario_id, scenario in catalog.scenarios.items():
        errors.extend(validate_scenario(scenario, catalog.origins.get(scenario_id, scenario_id)))
    return errors


def validate_scenario(scenario: Scenario, source: str) -> list[ScenarioError]:
    """Check one loaded scenario; returns `source: json.path: message` errors (empty when it is sound)."""
    return _ScenarioCheck(scenario, source).run()


class _ScenarioCheck:
    """Runs the checks of one scenario, collecting errors instead of stopping at the first."""

    def __init__(self, scenario: Scenario, source: str) -> None:
        self.scenario = scenario
        self.source = source
        self.errors: list[ScenarioError] = []
        self.inputs: dict[str, Validator] = {}
        self.outputs: dict[str, Validator] = {}
        self.state_validator: Validator | None = None
        self.initial_problems: set[tuple[str, str]] = set()

    def error(self, location: Location, message: str) -> None:
        self.errors.append(ScenarioError(self.source, location, message))

    def run(self) -> list[ScenarioError]:
        self.check_tools()
        self.check_state_schema()
        self.check_collections()
        self.check_descriptions(self.scenario.initial_state, ["state_descriptions"])
        self.initial_problems = self.check_state(
            self.scenario.initial_state, ["initial_state"], "the initial state", set()
        )
        for index, task in enumerate(self.scenario.tasks):
            self.check_task(index, task)
        return self.errors

    # --- schemas -------------------------------------------------------------------------------------

    def schema_validator(self, schema: dict[str, Any], location: Location) -> Validator | None:
        """A validator for `schema`, or None after reporting every way `schema` is not valid JSON Schema."""
        cls = validator_for(schema, default=Draft202012Validator)
        meta = validator_for(cls.META_SCHEMA, default=cls)(cls.META_SCHEMA)
        problems = sorted(meta.iter_errors(schema), key=lambda e: list(map(str, e.absolute_path)))
        for problem in problems:
            self.error(location + list(problem.absolute_path), f"invalid JSON Schema: {problem.message}")
        if problems:
            return None
        return local_validator(schema)

    def check_tools(self) -> None:
        for index, tool in enumerate(self.scenario.tools):
            where: Location = ["tools", index]
            validator = self.schema_validator(tool.input_schema, where + ["input_schema"])
            if validator is not None:
                self.inputs[tool.name] = validator
                if tool.input_schema.get("type") != "object":
                    self.error(
                        where + ["input_schema", "type"],
                        "a tool's input_schema must have `type: object` (tools take named arguments)",
                    )
            self.check_write_declarations(tool, where)
            if tool.output_schema is not None:
                output = self.schema_validator(tool.output_schema, where + ["output_schema"])
                if output is not None:
                    self.outputs[tool.name] = output
                    if tool.example_output is not None:
                        self.instance(output, tool.example_output, where + ["example_output"])

    def check_write_declarations(self, tool: Tool, where: Location) -> None:
        if tool.read_only and tool.writes:
            self.error(where + ["writes"], f"{tool.name} is read_only, so it cannot declare paths it writes")
        known = {*self.scenario.initial_state, *self.scenario.state_descriptions}
        for number, path in enumerate(tool.writes or []):
            top = path.split("/")[1] if path.startswith("/") else None
            if top is None:
                self.error(where + ["writes", number], f"{path!r} is not a JSON Pointer (it must start with /)")
            elif unescape(top) not in known:
                self.error(where + ["writes", number],
                           f"{path!r} names no top-level state key{_choices(top, sorted(known), 'state keys')}")

    def check_declared_writes(self, tool: Tool, patch: list[dict[str, Any]], at: Location) -> None:
        """A golden patch must keep to what its tool declares: nothing for a read-only tool, else its paths."""
        if tool.read_only and patch:
            self.error(at, f"{tool.name} is declared read_only, yet this reference step changes the state; "
                       "set read_only: false (and list the paths in writes) or empty the patch")
            return
        if tool.writes is None:
            return
        for number, operation in enumerate(patch):
            for key in ("path", "from") if operation.get("op") == "move" else ("path",):
                path = operation.get(key)
                if isinstance(path, str) and not tool.may_write(path):
                    self.error(at + [number, key], f"{path!r} is outside the paths {tool.name} declares in writes "
                               f"({', '.join(tool.writes)}); add it there or change the patch")

    def check_state_schema(self) -> None:
        if self.scenario.state_schema is not None:
            self.state_validator = self.schema_validator(self.scenario.state_schema, ["state_schema"])

    def check_collections(self) -> None:
        """Each declared collection's identity key and references, against the initial state."""
        for location, message in collection_problems(self.scenario.collections, self.scenario.initial_state):
            self.error(["collections", *location], message)

    def instance(self, validator: Validator, value: Any, location: Location) -> None:
        """Report every way `value` breaks the schema, each at its own JSON path."""
        for problem in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.absolute_path))):
            self.error(location + list(problem.absolute_path), problem.message)

    def state_problems(self, state: Any) -> set[tuple[str, str]]:
        if self.state_validator is None:
            return set()
        return {
            (_pointer(p.absolute_path) or "/", p.message) for p in self.state_validator.iter_errors(state)
        }

    def check_state(
        self, state: Any, location: Location, what: str, known: set[tuple[str, str]]
    ) -> set[tuple[str, str]]:
        """Report the state_schema violations of `state` not already in `known` (reported earlier)."""
        problems = self.state_problems(state)
        for pointer, message in sorted(problems - known):
            self.error(location, f"{what} does not satisfy state_schema at {pointer}: {message}")
        return problems

    def check_descriptions(self, state: dict[str, Any], location: Location) -> None:
        described = self.scenario.state_descriptions
        for key in state:
            if key not in described:
                self.error(
                    location,
                    f"top-level state key {key!r} has no description; add `{key}: <what it holds>` under "
                    "state_descriptions",
                )

    # --- tasks ---------------------------------------------------------------------------------------

    def check_task(self, index: int, task: Task) -> None:
        where: Location = ["tasks", index]
        state = merge_patch(self.scenario.initial_state, task.initial_state_patch)
        added = {key: value for key, value in state.items() if key not in self.scenario.initial_state}
        self.check_descriptions(added, where + ["initial_state_patch"])
        known = self.check_state(
            state, where + ["initial_state_patch"], "the task's initial state", self.initial_problems
        )
        final = self.replay(task, state, where, known)
        self.check_rubric(task, final, where + ["rubric"])

    def replay(
        self, task: Task, state: dict[str, Any], where: Location, known: set[tuple[str, str]]
    ) -> Any | None:
        """Check each golden step and apply its patch; the final state, or None if a patch failed."""
        current: Any | None = state
        for number, step in enumerate(task.reference_solution):
            at = where + ["reference_solution", number]
            tool = self.scenario.tool(step.tool)
            if tool is None:
                self.error(
                    at + ["tool"], f"unknown tool {step.tool!r}{_choices(step.tool, self.tool_names())}"
                )
            else:
                if tool.name in self.inputs:
                    self.instance(self.inputs[tool.name], step.arguments, at + ["arguments"])
                if tool.name in self.outputs:
                    self.instance(self.outputs[tool.name], step.observation, at + ["observation"])
                self.check_declared_writes(tool, step.state_patch, at + ["state_patch"])
            if current is None:
                continue
            current = self.apply(current, step.state_patch, at + ["state_patch"], number)
            if current is not None and step.state_patch:
                known = self.check_state(current, at + ["state_patch"], "the state after this step", known)
        return current

    def apply(self, state: Any, operations: list[dict[str, Any]], at: Location, number: int) -> Any | None:
        """Apply RFC 6902 operations; the state after them, or None after reporting the one that failed."""
        try:
            return apply_json_patch(state, operations)
        except PatchError as error:
            before = f"after reference step {number - 1}" if number else "at the task's start"
            self.error(
                at + ([error.index] if error.index is not None else []),
                f"cannot apply {json.dumps(error.operation, ensure_ascii=False)} to the state {before}: "
                f"{error.reason}",
            )
            return None

    def check_rubric(self, task: Task, final: Any | None, at: Location) -> None:
        names = self.tool_names()
        item_ids = [item.id for item in task.rubric.items]
        for index, item in enumerate(task.rubric.items):
            checks_at = at + ["items", index, "checks"]
            if isinstance(item, StateItem) and final is not None:
                for number, state_check in enumerate(item.checks):
                    problem = _resolve(final, state_check.pointer) if state_check.op != "absent" else None
                    if problem:
                        self.error(
                            checks_at + [number, "pointer"],
                            f"{state_check.pointer!r} does not resolve in the final reference state: {problem}",
                        )
            elif isinstance(item, ToolCallItem):
                for number, call_check in enumerate(item.checks):
                    for key in ("tool", "before", "after"):
                        name = getattr(call_check, key)
                        if name is not None and name not in names:
                            self.error(checks_at + [number, key], f"unknown tool {name!r}{_choices(name, names)}")
        for index, exemplar in enumerate(task.rubric.exemplars):
            if exemplar.item_id is not None and exemplar.item_id not in item_ids:
                self.error(
                    at + ["exemplars", index, "item_id"],
                    f"no rubric item {exemplar.item_id!r}{_choices(exemplar.item_id, item_ids, 'items')}",
                )

    def tool_names(self) -> list[str]:
        return [tool.name for tool in self.scenario.tools]


def _resolve(document: Any, pointer: str) -> str | None:
    """Why `pointer` does not resolve in `document`, or None when it does."""
    try:
        resolve_pointer(document, pointer)
    except UnresolvedPointer as error:
        return str(error)
    return None


def _pointer(path: Sequence[Any]) -> str:
    return JsonPointer.from_parts(path).path


def _choices(name: str, known: Sequence[str], noun: str = "tools") -> str:
    if not known:
        return ""
    close = difflib.get_close_matches(name, known, n=1) if len(known) > 1 else []
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f" (the {noun} are: {', '.join(known)}){hint}" if len(known) <= 12 else hint



def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"
