"""Print the catalog's rubric figures: order-dependent checks, credit at the start, loose checks, gate failures.

    .venv/bin/python bench/rubric_figures.py [PATH ...]   (default: the bundled catalog)

A near miss that repeats the passing exemplar's trajectory facts for the same item teaches a boundary in the
answer alone; its explanation says so ("the error is in the answer"). One whose error lies in what the agent did
carries its own trajectory, showing those calls.

An order-dependent check is a state check whose pointer names a position (`/log/0/...`) in a list that the
task's reference solution appends to: a correct agent that writes in another order fails it. (`/log/1 absent`
bounds the list's length instead, and is not counted.)
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from occusim.environments import (
    StateItem,
    Task,
    ToolCallItem,
    UnresolvedPointer,
    resolve_pointer,
    validate_sources,
)
from occusim.judge import check_item, derive_baselines, discriminate_catalog, score_baseline


def appended_lists(task: Task, initial: dict[str, Any]) -> set[str]:
    """Pointers of the lists the reference appends to (`add` at `/-` or at an index)."""
    appends: dict[str, int] = {}
    for step in task.reference_solution:
        for operation in step.state_patch:
            path = str(operation.get("path", ""))
            parent, _, last = path.rpartition("/")
            if operation.get("op") == "add" and (last == "-" or last.isdigit()) and _is_list(initial, parent):
                appends[parent] = appends.get(parent, 0) + 1
    return set(appends)


def _is_list(state: dict[str, Any], pointer: str) -> bool:
    try:
        return isinstance(resolve_pointer(state, pointer), list)
    except UnresolvedPointer:
        return True  # created by the reference itself


def order_dependent(task: Task, initial: dict[str, Any]) -> list[str]:
    grown = appended_lists(task, initial)
    found = []
    for item in task.rubric.items:
        if not isinstance(item, StateItem):
            continue
        for check in item.checks:
            parts = check.pointer.split("/")
            if check.op in ("absent", "exists") and parts[-1].isdigit():
                continue  # `/list/1 absent` bounds the list's length, whatever the order of its elements
            for cut in range(2, len(parts)):
                if parts[cut].isdigit() and "/".join(parts[:cut]) in grown:
                    found.append(f"{item.id}: {check.pointer}")
                    break
    return found


def passing_with_a_right_answer(catalog: Any, tasks: list[Task]) -> dict[str, tuple[int, int]]:
    """Per kind, (baselines an item catches, of them those that pass if their answer is judged right).

    The gates fail every baseline's answer; this says how many would pass on their state and calls alone.
    """
    counts = {"minus-step": [0, 0], "perturbed": [0, 0]}
    for task in tasks:
        for baseline in derive_baselines(catalog.scenario_of(task), task, catalog.initial_state(task)):
            if baseline.kind not in counts:
                continue
            score = score_baseline(task, dataclasses.replace(baseline, answer_correct=True))
            if score.failed_items:
                counts[baseline.kind][0] += 1
                counts[baseline.kind][1] += bool(score.passed)
    return {kind: (total, passing) for kind, (total, passing) in counts.items()}


# The phrase by which a near miss's explanation places its error in the answer alone.
ANSWER_ONLY = "error is in the answer"


def shared_trajectories(tasks: list[Task]) -> tuple[int, int, int]:
    """(near-miss exemplars, of them those repeating a passing exemplar's trajectory facts for the same item,
    of those the ones whose explanation places the error in the answer alone)."""
    near_misses = shared = answer_only = 0
    for task in tasks:
        exemplars = task.rubric.exemplars
        for exemplar in exemplars:
            if exemplar.passed:
                continue
            near_misses += 1
            passing = {e.trajectory_facts for e in exemplars if e.passed and e.item_id == exemplar.item_id}
            if exemplar.trajectory_facts in passing:
                shared += 1
                answer_only += ANSWER_ONLY in exemplar.explanation
    return near_misses, shared, answer_only


def main(argv: list[str]) -> int:
    catalog = validate_sources(argv, bundled=not argv).catalog  # the given sources alone, else the bundled ones
    tasks = [task for task in catalog.tasks.values() if task.reference_solution]
    order_checks = {task.id: order_dependent(task, catalog.initial_state(task)) for task in tasks}
    credit = [
        (task.id, item.id)
        for task in tasks
        for item in task.rubric.items
        if isinstance(item, StateItem) and not item.guard
        and check_item(item, state=catalog.initial_state(task), steps=[]).passed is True
    ]
    bare = [
        (task, check)
        for task in tasks
        for item in task.rubric.items
        if isinstance(item, ToolCallItem)
        for check in item.checks
        if check.arguments_match is None and check.arguments_where is None
    ]
    # A bare check on a tool the reference calls without arguments (a list, a board) cannot say more.
    bare_with_arguments = sum(
        1 for task, check in bare if any(step.arguments for step in task.reference_solution if step.tool == check.tool)
    )
    report = discriminate_catalog(catalog, tasks)
    idle = {task.task_id: b.score for task in report.tasks for b in task.baselines if b.kind == "do-nothing"}
    worst = max(idle.items(), key=lambda pair: pair[1], default=("-", 0.0))
    print(f"tasks with a reference:              {len(tasks)}")
    print(f"order-dependent checks:              {sum(map(len, order_checks.values()))} "
          f"in {sum(1 for found in order_checks.values() if found)} tasks")
    print(f"state items true at the start:       {len(credit)} in {len({task for task, _ in credit})} tasks")
    print(f"tool_call checks without arguments:  {len(bare)} ({bare_with_arguments} on tools called with arguments)")
    print(f"do-nothing score, highest:           {worst[1]:.2f} ({worst[0]})")
    print(f"do-nothing score above 0.10:         {sum(1 for score in idle.values() if score > 0.10)} tasks")
    print(f"do-nothing score above 0:            {sum(1 for score in idle.values() if score > 0)} tasks")
    print("tasks failing each gate:             "
          + ", ".join(f"{gate} {count}" for gate, count in report.gate_counts().items()))
    for kind, (total, passing) in passing_with_a_right_answer(catalog, tasks).items():
        print(f"{kind} baselines an item catches that pass with a right answer: {passing} of {total}")
    near_misses, shared, answer_only = shared_trajectories(list(catalog.tasks.values()))
    print(f"near misses repeating the passing trajectory: {shared} of {near_misses} "
          f"({answer_only} with the error in the answer alone, {shared - answer_only} not)")
    print(report.summary())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
