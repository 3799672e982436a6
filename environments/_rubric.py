"""The rubric format: weighted items whose checks must all pass (chained), of three explicit kinds.

Items may be `critical` (failing one fails the task whatever the score) or, for state items, `guards`
(true at the start, must stay true; they never earn score, they can only fail the task).
"""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ._errors import inconsistent

CompareOp = Literal["eq", "ne", "lt", "le", "gt", "ge", "contains"]
PresenceOp = Literal["exists", "absent"]
RangeOp = Literal["between"]
ElementOp = Literal["any", "none", "count"]
StateOp = Literal[CompareOp, PresenceOp, RangeOp, ElementOp]
# A pointer is empty (the whole state) or starts with '/': stated in the schema, checked with a clearer message.
POINTER_PATTERN = "^(/.*)?$"
VALUELESS_OPS = frozenset({"exists", "absent", "any", "none"})
# Order-insensitive checks over the elements of a list (or the values of an object).
ELEMENT_OPS = frozenset({"any", "none", "count"})
_TOLERANT_OPS = frozenset({"eq", "ne", "between"})


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateCheck(_Strict):
    """An assertion on the final tracked state (or, inside `where`, on one element of a list).

    A document's check is one of its kinds, told apart by `op` (`CompareCheck`, `PresenceCheck`, `RangeCheck`,
    `ElementCheck`), so that its schema says which ops need a `value`; Python code may build this base with
    any op.
    """

    pointer: str = Field(description="RFC 6901 JSON Pointer into the final state, e.g. /patients/0/priority",
                         json_schema_extra={"pattern": POINTER_PATTERN})
    op: StateOp = Field(
        description="`between` takes [low, high] (both included); `any`, `none` and `count` look at each "
        "element of the list (or value of the object) at `pointer` and count those matching `match` and `where`."
    )
    value: Any = Field(
        default=None,
        description="Compared value; [low, high] for `between`; the number of matching elements for `count`; "
        "unused by `exists`, `absent`, `any` and `none`.",
    )
    tolerance: float | None = Field(
        default=None, ge=0, description="Numbers within this distance of `value` (or of the range) count as equal."
    )
    match: dict[str, Any] | None = Field(
        default=None,
        description="For `any`/`none`/`count`: a partial object an element must contain (recursively).",
    )
    where: list[StateCheck] | None = Field(
        default=None,
        min_length=1,
        description="For `any`/`none`/`count`: checks an element must pass, their pointers relative to the element.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> StateCheck:
        # Nested checks (`where`, `arguments_where`) are of this base kind, whose schema cannot say which ops
        # need a `value`: their contradictions are `inconsistent` (409 over REST), not malformed input.
        if self.pointer and not self.pointer.startswith("/"):
            raise inconsistent(f"pointer {self.pointer!r} must be empty or start with '/'")
        if self.op not in VALUELESS_OPS and "value" not in self.model_fields_set:
            raise inconsistent(f"op {self.op!r} needs a `value`")
        if self.op in ELEMENT_OPS:
            if self.match is None and self.where is None:
                raise inconsistent(f"op {self.op!r} needs `match` (a partial object), `where` (checks), or both")
            if self.op == "count" and (
                not isinstance(self.value, int) or isinstance(self.value, bool) or self.value < 0
            ):
                raise inconsistent(f"op 'count' needs a whole number >= 0 as `value`, got {self.value!r}")
        elif self.match is not None or self.where is not None:
            raise inconsistent(f"`match` and `where` belong to the ops any, none and count, not {self.op!r}")
        if self.op == "between":
            _check_range(self.value)
        if self.tolerance is not None and self.op not in _TOLERANT_OPS:
            raise inconsistent(f"`tolerance` applies to eq, ne and between, not {self.op!r}")
        return self


class CompareCheck(StateCheck):
    """The value at `pointer` compared with `value`, which the check must name (null included)."""

    op: CompareOp
    value: Any = Field(description="Compared value (`contains`: an element, a key or a substring).")


class PresenceCheck(StateCheck):
    """Whether anything is at `pointer`."""

    op: PresenceOp
    value: Any = Field(default=None, description="Unused.")


class RangeCheck(StateCheck):
    """The value at `pointer` within the closed range `value: [low, high]`, widened by `tolerance`."""

    op: RangeOp
    value: Any = Field(description="[low, high]: two numbers or two strings, low <= high.")


class ElementCheck(StateCheck):
    """How many elements of the list (or values of the object) at `pointer` match `match` and `where`."""

    op: ElementOp


StateCheckKind = Annotated[CompareCheck | PresenceCheck | RangeCheck | ElementCheck, Field(discriminator="op")]


def _check_range(value: Any) -> None:
    numbers = isinstance(value, list) and len(value) == 2 and all(_is_number(v) for v in value)
    strings = isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)
    if not (numbers or strings):
        raise inconsistent(f"op 'between' needs `value: [low, high]`, two numbers or two strings, got {value!r}")
    if value[0] > value[1]:
        raise inconsistent(f"op 'between' needs low <= high, got {value!r}")
    if strings:
        zoned = set()
        for bound in value:
            with contextlib.suppress(ValueError):
                zoned.add(datetime.fromisoformat(bound).tzinfo is not None)
        if len(zoned) > 1:
            raise inconsistent(f"op 'between' needs both times with a zone or both without, got {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


class ToolCallCheck(_Strict):
    """The agent called `tool`, optionally with matching arguments and in order relative to another tool."""

    tool: str
    arguments_match: dict[str, Any] | None = Field(
        default=None, description="A partial object the call's arguments must contain (recursively)."
    )
    arguments_where: list[StateCheck] | None = Field(
        default=None,
        min_length=1,
        description="Checks the call's arguments must pass, pointers into the arguments (e.g. /amount between).",
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
    critical: bool = Field(default=False, description="When this item fails, the task fails whatever its score.")


class LlmItem(_ItemBase):
    """Binary criteria in words, read by the LLM judge."""

    kind: Literal["llm"] = "llm"
    checks: list[str] = Field(min_length=1)


class StateItem(_ItemBase):
    kind: Literal["state"] = "state"
    checks: list[StateCheckKind] = Field(min_length=1)
    guard: bool = Field(
        default=False,
        description="True at the start and must stay true (\"the hold was not released\"): earns no score, "
        "and failing it fails the task.",
    )

    @model_validator(mode="after")
    def _guard_is_not_critical(self) -> StateItem:
        if self.guard and self.critical:
            raise inconsistent(f"item {self.id!r}: a guard already fails the task when it fails; drop `critical`")
        return self


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

    @property
    def trajectory_facts(self) -> str:
        """What the excerpt says the agent did: the text before `Final answer:`, whitespace collapsed."""
        facts, _, _ = self.excerpt.partition("Final answer:")
        return " ".join(facts.split())


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
        if self.items and all(isinstance(item, StateItem) and item.guard for item in self.items):
            raise inconsistent("every rubric item is a guard, so nothing earns score; add an item that does")
        return self
