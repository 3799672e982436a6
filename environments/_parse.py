"""Validate one parsed document as a Scenario, every problem reported as a `file: json.path: message` error."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import ValidationError

from ._errors import ScenarioError, ScenarioErrors
from ._rubric import StateOp
from ._scenario import Scenario
from ._schema_safety import schema_problems


def validation_errors(source: str, error: ValidationError) -> list[ScenarioError]:
    """Turn pydantic's errors into `file: json.path: message` errors."""
    out = []
    for detail in error.errors():
        location = [part for part in detail["loc"] if not (isinstance(part, str) and part in _UNION_TAGS)]
        message = detail["msg"]
        if detail["type"] == "extra_forbidden":
            message = "unknown field (check its spelling against the format's JSON Schema)"
        elif detail["type"] == "missing":
            message = "required field is missing"
        elif detail["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        elif isinstance(detail.get("input"), str | int | float | bool):
            message = f"{message} (got {detail['input']!r})"
        out.append(ScenarioError(source, location, message))
    return out


# The tags pydantic puts in a location inside a discriminated union: rubric item kinds and state check ops.
_UNION_TAGS = {"llm", "state", "tool_call", *get_args(StateOp)}


def parse_scenario(data: object, source: str) -> Scenario:
    """Validate one parsed document as a scenario, raising every problem at once."""
    if not isinstance(data, dict):
        problem = f"expected a mapping at the top level, got {type(data).__name__}"
        raise ScenarioErrors([ScenarioError(source, "", problem)])
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as error:
        raise ScenarioErrors(validation_errors(source, error)) from None
    errors = scenario_schema_errors(scenario, source)
    if errors:
        raise ScenarioErrors(errors)
    return scenario


def scenario_schema_errors(scenario: Scenario, source: str) -> list[ScenarioError]:
    """Schemas that would reach outside the scenario or break every call of their tool (see _schema_safety)."""
    schemas: list[tuple[list[str | int], Any]] = [(["state_schema"], scenario.state_schema)]
    for index, tool in enumerate(scenario.tools):
        schemas += [(["tools", index, "input_schema"], tool.input_schema),
                    (["tools", index, "output_schema"], tool.output_schema)]
    return [
        ScenarioError(source, where + path, message)
        for where, schema in schemas if schema is not None
        for path, message in schema_problems(schema)
    ]
