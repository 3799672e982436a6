"""The score arithmetic, in one place: chained items, weighted shares, the pass threshold, critical and guard items."""

from __future__ import annotations

from collections.abc import Sequence

from occusim.environments import EpisodeRecord, LlmItem, ReferenceStep, StateItem, StepRecord, ToolCallItem

from ._state_check import check_state, describe_state_check
from ._tool_call_check import check_tool_call
from ._verdict import CheckVerdict, ItemVerdict

# Weights are floats: 0.1 + 0.2 must still reach a 0.3 threshold.
_EPSILON = 1e-9


def item_passed(checks: Sequence[CheckVerdict]) -> bool | None:
    """Chaining: an item passes only if ALL its checks pass; None while any check is unjudged."""
    if any(check.passed is False for check in checks):
        return False
    if any(check.passed is None for check in checks):
        return None
    return True


def score_items(items: Sequence[ItemVerdict], pass_threshold: float = 1.0) -> tuple[float, bool | None]:
    """(score, passed) where score = sum(weight * passed) / sum(weight) over the judged scoring items.

    Guard items earn nothing and count in no weight. passed is score >= pass_threshold with no failed
    critical or guard item: one such failure fails the task whatever the score. With unjudged items it
    is decided only when they cannot change the outcome (None otherwise). With nothing judged the score
    is 0.0.
    """
    scoring = [item for item in items if not item.guard]
    judged = [item for item in scoring if item.passed is not None]
    judged_weight = sum(item.weight for item in judged)
    passed_weight = sum(item.weight for item in judged if item.passed)
    total = sum(item.weight for item in scoring)
    score = passed_weight / judged_weight if judged_weight else 0.0
    blocking = [item for item in items if item.critical or item.guard]
    if any(item.passed is False for item in blocking):
        return score, False
    blocking_open = any(item.passed is None for item in blocking)
    if len(judged) == len(scoring):
        reached = score >= pass_threshold - _EPSILON
        return score, (None if blocking_open else True) if reached else False
    lowest = passed_weight / total if total else 0.0
    highest = (passed_weight + total - judged_weight) / total if total else 0.0
    if highest < pass_threshold - _EPSILON:
        return score, False
    if lowest >= pass_threshold - _EPSILON and not blocking_open:
        return score, True
    return score, None


def check_item(
    item: StateItem | ToolCallItem,
    record: EpisodeRecord | None = None,
    *,
    state: dict | None = None,
    steps: Sequence[StepRecord | ReferenceStep] | None = None,
) -> ItemVerdict:
    """Evaluate a deterministic item on a record, or on an explicit final `state` and `steps`.

    The explicit form lets a task author replay a reference solution without building a record.
    """
    final_state = state if state is not None else (record.state if record else {})
    calls = steps if steps is not None else (record.steps if record else [])
    if isinstance(item, StateItem):
        checks = [check_state(c, final_state, index=i, item_id=item.id) for i, c in enumerate(item.checks)]
    else:
        checks = [check_tool_call(c, calls, index=i, item_id=item.id) for i, c in enumerate(item.checks)]
    return ItemVerdict(
        id=item.id,
        kind=item.kind,
        weight=item.weight,
        description=item.description,
        passed=item_passed(checks),
        checks=checks,
        deterministic=True,
        critical=item.critical,
        guard=isinstance(item, StateItem) and item.guard,
    )


def unjudged_item(item: LlmItem | StateItem, reason: str = "not judged (llm items skipped)") -> ItemVerdict:
    """An item left out: llm items the caller skipped, or state items of an episode with no tracked state."""
    descriptions = (
        list(item.checks) if isinstance(item, LlmItem) else [describe_state_check(c) for c in item.checks]
    )
    checks = [
        CheckVerdict(index=i, id=f"{item.id}#{i}", description=text, passed=None, reason=reason)
        for i, text in enumerate(descriptions)
    ]
    return ItemVerdict(
        id=item.id,
        kind=item.kind,
        weight=item.weight,
        description=item.description,
        passed=None,
        checks=checks,
        deterministic=isinstance(item, StateItem),
        critical=item.critical,
        guard=isinstance(item, StateItem) and item.guard,
    )
