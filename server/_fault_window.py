"""The window over which a fault schedule spreads its faults: the task's expected length, never too narrow."""

from __future__ import annotations

import re

from occusim.environments import Task

# OccuBench's verification plans number their top-level steps `1. ...`, `2. ...` at the start of a line.
_PLAN_STEP = re.compile(r"(?m)^\d+\.\s")


def expected_calls(task: Task | None) -> int:
    """How many tool calls the task is expected to take: its reference solution's steps, else the numbered
    steps of its verification plan (OccuBench's tasks have no reference solution), else 0 (unknown)."""
    if task is None:
        return 0
    if task.reference_solution:
        return len(task.reference_solution)
    return len(_PLAN_STEP.findall(task.verification_plan or ""))


def fault_window(calls_needed: int, *, expected: int, setting: int | None = None, max_steps: int | None = None) -> int:
    """The calls (from the first) within which every fault starts and ends.

    `setting` (an explicit window) wins over `expected`; either way the window is at least twice
    `calls_needed`, so that the faults' places vary on short tasks too, and at most the task's
    `max_steps` (a window no episode can reach would leave every episode too short), though never below
    `calls_needed`.
    """
    if calls_needed == 0:
        return 0
    window = max(setting if setting is not None else expected, 2 * calls_needed)
    if max_steps is not None:
        window = min(window, max(max_steps, calls_needed))
    return window
