"""The rubric format: weighted items whose checks must all pass (chained), of three explicit kinds."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._errors import inconsistent

CompareOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "contains"]
PresenceOp = Literal["exists", "absent"]
StateOp = Literal[CompareOp, PresenceOp]
VALUELESS_OPS = frozenset({"exists", "absent"})
# A pointer is empty (the whole state) or starts with '/': stated in the schema, checked with a clearer message.
POINTER_PATTERN = "^(/.*)?$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateCheck(_Strict):
    """An assertion on the final tracked state.

    A document's check is one of its two kinds, told apart by `op` (`CompareCheck`, `PresenceCheck`), so that
    its schema says which ops need a `value`; Python code may build this base with any op.
    """

    pointer: str = Field(description="RFC 6901 JSON Pointer into the final state, e.g. /patients/0/priority",
                         json_schema_extra={"pattern": POINTER_PATTERN})
    op: StateOp
    value: Any = Field(default=None, description="Compared value; unused by `exists` and `absent`.")

    @model_validator(mode="after")
    def _pointer_syntax(self) -> StateCheck:
        if self.pointer and not self.pointer.startswith("/"):
            raise ValueError(f"pointer {self.pointer!r} must be empty or start with '/'")
        if self.op not in VALUELESS_OPS and "value" not in self.model_fields_set:
            raise ValueError(f"op {self.op!r} needs a `value`")
        return self


class CompareCheck(StateCheck):
    """The value at `pointer` compared with `value`, which the check must name (null included)."""

    op: CompareOp
    value: Any = Field(description="Compared value (`contains`: an element, a key or a substring).")


class PresenceCheck(StateCheck):
    """Whether anything is at `pointer`."""

    op: PresenceOp
    value: Any = Field(default=None, description="Unused.")


StateCheckKind = Annotated[CompareCheck | PresenceCheck, Field(discriminator="op")]


class ToolCallCheck(_Strict):
    """The agent called `tool`, optionally with matching arguments and in order relative to another tool."""

    tool: str
    arguments_match: dict[str, Any] | None = Field(
        default=None, description="A partial object the call's arguments must contain (recursively)."
    )
    before: str | None = Field(default=None, description="A tool that must be called after this call.")
    after: str | None = Field(default=None, description="A tool that must be called before this call.")


def _kind_required(schema: dict[str, Any]) -> None:
    # Python code may leave `kind` to its default, but a document must name it: the union is told apart by it.
    if "kind" not in schema.setdefault("required", []):
        schema["required"].append("kind")


class _ItemBase(_Strict):
    model_config = ConfigDict(extra="forbid", json_schema_extra=_kind_required)

    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    description: str
    weight: float = Field(default=1.0, gt=0)


class LlmItem(_ItemBase):
    """Binary criteria in words, read by the LLM judge."""

    kind: Literal["llm"] = "llm"
    checks: list[str] = Field(min_length=1)


class StateItem(_ItemBase):
    kind: Literal["state"] = "state"
    checks: list[StateCheckKind] = Field(min_length=1)


class ToolCallItem(_ItemBase):
    kind: Literal["tool_call"] = "tool_call"
    checks: list[ToolCallCheck] = Field(min_length=1)


RubricItem = Annotated[LlmItem | StateItem | ToolCallItem, Field(discriminator="kind")]


class Exemplar(_Strict):
    """A calibration example: an expert's verdict on a short trajectory excerpt, shown to the judge."""

    item_id: str | None = None
    excerpt: str
    passed: bool
    explanation: str = ""


class Rubric(_Strict):
    items: list[RubricItem] = Field(default_factory=list)
    pass_threshold: float = Field(default=1.0, gt=0, le=1)
    exemplars: list[Exemplar] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique_ids(self) -> Rubric:
        seen: set[str] = set()
        for item in self.items:
            if item.id in seen:
                raise inconsistent(f"duplicate rubric item id {item.id!r}")
            seen.add(item.id)
        return self
