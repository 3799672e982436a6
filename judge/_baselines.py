"""Bad agents derived from a task's reference solution: the trajectories the discrimination gates score.

Each baseline is the reference changed in one way (nothing done, only its reads, one write left out, one
write's argument perturbed, independent writes reordered, a near miss's answer). Its final state is the
task's initial state with the kept steps' patches applied, operation by operation: an operation that no
longer applies (it edited what a left-out step created) is dropped, as a world would refuse it.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from occusim.environments import (
    PatchError,
    ReferenceStep,
    Scenario,
    Task,
    ToolCallItem,
    apply_json_patch,
)

from ._json_values import is_number, json_equal

BaselineKind = Literal[
    "reference", "do-nothing", "read-only", "minus-step", "perturbed", "reordered", "near-miss-answer"
]


@dataclass(frozen=True)
class Baseline:
    """One derived trajectory: its steps, final state and answer, and whether a correct judge passes it."""

    name: str
    kind: BaselineKind
    steps: list[ReferenceStep]
    state: dict[str, Any]
    answer: str
    answer_correct: bool
    step: int | None = None
    note: str = ""


def replay(state: dict[str, Any], steps: list[ReferenceStep]) -> dict[str, Any]:
    """Apply each step's patch, operation by operation, dropping the operations that no longer apply."""
    current = state
    for step in steps:
        for operation in step.state_patch:
            try:
                current = apply_json_patch(current, [operation])
            except PatchError:
                continue
    return current


def is_write(scenario: Scenario, step: ReferenceStep) -> bool:
    tool = scenario.tool(step.tool)
    return bool(step.state_patch) or (tool is not None and tool.read_only is False)


def derive_baselines(scenario: Scenario, task: Task, initial: dict[str, Any]) -> Iterator[Baseline]:
    """Every baseline of `task`, the reference first."""
    reference = list(task.reference_solution)
    answer = task.final_answer or ""

    def make(name: str, kind: BaselineKind, steps: list[ReferenceStep], text: str, correct: bool,
             step: int | None = None, note: str = "") -> Baseline:
        return Baseline(name, kind, steps, replay(initial, steps), text, correct, step, note)

    yield make("reference", "reference", reference, answer, True)
    yield make("do-nothing", "do-nothing", [], "", False)
    reads = [step for step in reference if not is_write(scenario, step)]
    yield make("read-only", "read-only", reads, "", False)
    writes = [index for index, step in enumerate(reference) if is_write(scenario, step)]
    for index in writes:
        kept = reference[:index] + reference[index + 1 :]
        yield make(f"minus-step-{index}", "minus-step", kept, answer, False, index,
                   note=f"without {reference[index].tool}")
    for index in writes:
        for argument, changed in _perturbations(reference[index]):
            steps = [*reference[:index], changed, *reference[index + 1 :]]
            yield make(f"perturbed-step-{index}-{argument}", "perturbed", steps, answer, False, index,
                       note=f"{reference[index].tool}.{argument} = {changed.arguments[argument]!r}")
    reordered = reorder_independent_writes(reference, writes, _ordered_tools(task))
    if reordered is not None:
        yield make("reordered", "reordered", reordered, answer, True)
    for number, exemplar in enumerate(task.rubric.exemplars):
        if not exemplar.passed:
            yield make(f"near-miss-answer-{number}", "near-miss-answer", reference, exemplar.excerpt, False,
                       note=exemplar.item_id or "")


def _perturbations(step: ReferenceStep) -> Iterator[tuple[str, ReferenceStep]]:
    """For each argument whose value the step's patch carries, the step with that value changed there."""
    for name, value in step.arguments.items():
        changed = _perturb(value)
        if changed is None or not any(_carries(operation.get("value"), value) for operation in step.state_patch):
            continue
        patch = [
            {**operation, "value": _replace(operation["value"], value, changed)} if "value" in operation else operation
            for operation in step.state_patch
        ]
        yield name, step.model_copy(update={"arguments": {**step.arguments, name: changed}, "state_patch": patch})


def _perturb(value: Any) -> Any | None:
    """A different value of the same type; None for free text and values without an obvious neighbour."""
    if isinstance(value, bool):
        return not value
    if is_number(value):
        return value * 2 + 1 if isinstance(value, int) else round(value * 1.5 + 1.0, 4)
    if isinstance(value, str) and value and not any(c.isspace() for c in value):
        return f"{value}-X"
    return None


def _carries(document: Any, value: Any) -> bool:
    if isinstance(document, dict):
        return any(_carries(v, value) for v in document.values())
    if isinstance(document, list):
        return any(_carries(v, value) for v in document)
    return type(document) is type(value) and json_equal(document, value) if not is_number(value) else (
        is_number(document) and json_equal(document, value)
    )


def _replace(document: Any, old: Any, new: Any) -> Any:
    if isinstance(document, dict):
        return {key: _replace(v, old, new) for key, v in document.items()}
    if isinstance(document, list):
        return [_replace(v, old, new) for v in document]
    return new if _carries(document, old) else document


def _ordered_tools(task: Task) -> set[frozenset[str]]:
    """Pairs of tools whose order the rubric states (`before`/`after`): reordering them is not neutral."""
    pairs: set[frozenset[str]] = set()
    for item in task.rubric.items:
        if isinstance(item, ToolCallItem):
            for check in item.checks:
                for other in (check.before, check.after):
                    if other is not None:
                        pairs.add(frozenset((check.tool, other)))
    return pairs


def reorder_independent_writes(
    steps: list[ReferenceStep], writes: list[int], ordered: set[frozenset[str]]
) -> list[ReferenceStep] | None:
    """The reference with each run of consecutive, independent writes reversed; None when there is none.

    Two writes are independent when neither patch touches a path at or under a path of the other (appends
    to the same list excepted: their order is what an order-robust rubric must not care about) and the
    rubric does not order their tools.
    """
    result = list(steps)
    changed = False
    for run in _runs(writes):
        if len(run) < 2:
            continue
        chosen = [steps[i] for i in run]
        if all(_independent(a, b, ordered) for a, b in itertools.combinations(chosen, 2)):
            for position, step in zip(run, reversed(chosen), strict=True):
                result[position] = step
            changed = True
    return result if changed else None


def _runs(indexes: list[int]) -> Iterator[list[int]]:
    run: list[int] = []
    for index in indexes:
        if run and index != run[-1] + 1:
            yield run
            run = []
        run.append(index)
    if run:
        yield run


def _independent(first: ReferenceStep, second: ReferenceStep, ordered: set[frozenset[str]]) -> bool:
    if first.tool != second.tool and frozenset((first.tool, second.tool)) in ordered:
        return False
    return not any(
        _overlap(a, b) for a in _paths(first) for b in _paths(second)
    )


def _paths(step: ReferenceStep) -> list[str]:
    return [str(op.get(key)) for op in step.state_patch for key in ("path", "from") if key in op]


def _overlap(first: str, second: str) -> bool:
    if first.endswith("/-") and second.endswith("/-"):
        return False
    first_list, second_list = first.removesuffix("/-"), second.removesuffix("/-")
    return _under(first_list, second_list) or _under(second_list, first_list)


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")
