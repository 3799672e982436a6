"""The error a tool result reports, `{"error": {"type", "message", ...}}`: written and read the same way by
the server, the clients and the judge."""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, ValidationError


class ToolErrorType(StrEnum):
    """Every error type occusim writes into a tool result, and `tool_error` for a simulated tool's own."""

    # A recorded step the world model did not answer: bad arguments, or no usable answer from the model.
    INVALID_ARGUMENTS = "invalid_arguments"
    SIMULATOR_ERROR = "simulator_error"
    SIMULATOR_UNAVAILABLE = "simulator_unavailable"
    # Explicit faults (E1), shaped like the failures of a real service.
    HTTP_ERROR = "http_error"
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    # The MCP server's refusals, never recorded as steps.
    UNKNOWN_TOOL = "unknown_tool"
    EPISODE_CLOSED = "episode_closed"
    STEP_LIMIT = "step_limit"
    EPISODE_ERROR = "episode_error"
    # What an agent's client shows it in place of a result.
    NOT_RUN = "not_run"
    MCP_ERROR = "mcp_error"
    INVALID_RESULT = "invalid_result"
    # Read, never written: the simulated tool's own failure, `{"error": "<why>"}` or an object without a type.
    TOOL_ERROR = "tool_error"


def _known_type(value: str) -> str:
    if not value:
        raise ValueError("an error type must not be empty")
    try:
        return ToolErrorType(value)
    except ValueError:
        return value  # a simulated tool's own type, e.g. "not_found"


class SchemaViolation(BaseModel):
    """One way the arguments break the tool's input schema: where (a JSON Pointer) and what."""

    path: str
    message: str


class ToolError(BaseModel):
    """The `error` object of a tool result.

    `type` is a ToolErrorType for every error occusim writes; a world model's answer may carry its own
    types and fields, which are kept. `status` is the HTTP status of an HTTP-shaped fault, `code` the
    JSON-RPC code of an MCP refusal, `violations` the schema violations of `invalid_arguments`.
    """

    model_config = ConfigDict(extra="allow")

    type: Annotated[ToolErrorType | str, AfterValidator(_known_type)]
    status: int | None = None
    code: int | None = None
    message: str
    violations: list[SchemaViolation] | None = None

    def envelope(self) -> dict[str, Any]:
        """The tool result `{"error": {...}}` as JSON data: declared fields left out when empty, a world
        model's own fields kept as they are (null included), so that the envelope reads back as itself."""
        data = self.model_dump(mode="json")
        for name in _OPTIONAL_FIELDS:
            if data.get(name) is None:
                data.pop(name, None)
        return {"error": data}


_OPTIONAL_FIELDS = ("status", "code", "violations")


def reports_error(observation: Any) -> bool:
    """Whether a tool result reports an error: a JSON object whose `error` member is not empty.

    Empty means null, false, 0, "", [] or {}: a tool answering `{"error": null, ...}` succeeded. Anything
    else reports an error: occusim's `{"error": {"type", "message"}}`, a simulated tool's
    `{"error": "<why>"}`, or any other value a world model wrote there.
    """
    return isinstance(observation, dict) and bool(observation.get("error"))


def read_tool_error(observation: Any) -> ToolError | None:
    """The error a tool result reports (see `reports_error`), as a ToolError; None when it reports none.

    Never raises, whatever the JSON: a string becomes the message of a `tool_error`, and an object that is
    not a valid ToolError keeps its `type` and `message` where they are strings.
    """
    if not reports_error(observation):
        return None
    value = observation["error"]
    if isinstance(value, str):
        return ToolError(type=ToolErrorType.TOOL_ERROR, message=value)
    if isinstance(value, dict):
        try:
            return ToolError.model_validate(value)
        except ValidationError:
            kind, message = value.get("type"), value.get("message")
            return ToolError(
                type=kind if isinstance(kind, str) and kind else ToolErrorType.TOOL_ERROR,
                message=message if isinstance(message, str) else _compact(value),
            )
    return ToolError(type=ToolErrorType.TOOL_ERROR, message=_compact(value))


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
