"""`tool_call` checks: the agent called a tool, with matching arguments, in order relative to another tool.

Which calls count: every call the agent made that reached the simulated world, including calls whose
result was an injected fault (the agent did make them) and calls answered with a domain error. Calls
rejected before reaching the world (invalid arguments, unknown tool, a simulator that gave up: a step
with `error` set and no `fault`) do not count.

Ordering: `before: Y` needs the FIRST matching call to precede the first call of Y, so a premature Y cannot
be repaired by repeating the check afterwards. `after: Y` needs SOME matching call after the first call of
Y: checking a dashboard before and again after a rollback is normal practice.
"""

from __future__ import annotations

from collections.abc import Sequence

from occusim.environments import ReferenceStep, StepRecord, ToolCallCheck

from ._json_values import json_contains, short_json
from ._state_check import all_pass, describe_state_check
from ._verdict import CheckVerdict

Call = StepRecord | ReferenceStep


def describe_tool_call_check(check: ToolCallCheck) -> str:
    text = f"called {check.tool}"
    if check.arguments_match:
        text += f" with {short_json(check.arguments_match)}"
    if check.arguments_where:
        text += " where " + " and ".join(describe_state_check(sub) for sub in check.arguments_where)
    if check.after:
        text += f", after {check.after}"
    if check.before:
        text += f", before {check.before}"
    return text


def counts_as_call(step: Call) -> bool:
    """Whether a recorded step is a call the agent made to the world (see the module docstring)."""
    if isinstance(step, StepRecord):
        return not (step.error and step.fault is None)
    return True


def check_tool_call(
    check: ToolCallCheck, steps: Sequence[Call], *, index: int = 0, item_id: str = ""
) -> CheckVerdict:
    """Evaluate one tool_call check on recorded steps (or on a task's reference solution)."""
    passed, reason, evidence = _evaluate(check, steps)
    return CheckVerdict(
        index=index,
        id=f"{item_id}#{index}",
        description=describe_tool_call_check(check),
        passed=passed,
        reason=reason,
        evidence_steps=evidence,
    )


def _evaluate(check: ToolCallCheck, steps: Sequence[Call]) -> tuple[bool, str, list[int]]:
    numbered = [(_step_index(step, position), step) for position, step in enumerate(steps)]
    counted = [(i, step) for i, step in numbered if counts_as_call(step)]
    calls = [(i, step) for i, step in counted if step.tool == check.tool]
    if not calls:
        rejected = sum(1 for _, step in numbered if step.tool == check.tool and not counts_as_call(step))
        note = f" ({rejected} rejected call(s) did not reach the simulator)" if rejected else ""
        return False, f"{check.tool} was never called{note}", []
    expected = check.arguments_match
    constrained = expected is not None or check.arguments_where is not None
    matching = [
        (i, step)
        for i, step in calls
        if (expected is None or json_contains(expected, step.arguments))
        and all_pass(check.arguments_where, step.arguments)
    ]
    if not matching:
        seen = "; ".join(f"step {i}: {short_json(step.arguments)}" for i, step in calls[:3])
        wanted = describe_tool_call_check(check.model_copy(update={"before": None, "after": None}))
        wanted = wanted.removeprefix(f"called {check.tool} ")
        return False, f"{check.tool} was called {len(calls)} time(s), none {wanted} ({seen})", []
    first_call = {tool: next((i for i, step in counted if step.tool == tool), None)
                  for tool in (check.after, check.before) if tool is not None}
    first, _ = matching[0]
    after_first = first_call.get(check.after) if check.after is not None else None
    if after_first is not None:
        first = next((i for i, _ in matching if i > after_first), first)
    evidence = [first]
    reasons = [f"{check.tool} called at step {first}" + (" with matching arguments" if constrained else "")]
    for other, must_come_after in ((check.after, False), (check.before, True)):
        if other is None:
            continue
        other_first = first_call[other]
        if other_first is None:
            return False, f"{reasons[0]}, but {other} was never called", evidence
        evidence.append(other_first)
        if must_come_after and other_first < first:
            return (
                False,
                f"{reasons[0]}, but {other} was first called earlier, at step {other_first}",
                evidence,
            )
        if not must_come_after and other_first > first:
            return False, f"{reasons[0]}, before {other} was first called at step {other_first}", evidence
        reasons.append(f"{other} first called at step {other_first}")
    return True, "; ".join(reasons), sorted(set(evidence))


def _step_index(step: Call, position: int) -> int:
    return step.index if isinstance(step, StepRecord) else position
