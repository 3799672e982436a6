"""A world model that answers the n-th call with the n-th golden step, and playing steps into an episode."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence
from typing import Any

from occusim.environments import ReferenceStep, Task
from occusim.llm import scripted_model
from occusim.server import Episode, StepOutcome

Answer = dict[str, Any]


def golden_world(
    task: Task,
    name: str,
    steps: Sequence[ReferenceStep] | None = None,
    change: Callable[[int, Answer], list[Answer]] | None = None,
) -> str:
    """Answers the n-th call with the n-th step's observation and patch (the task's reference solution by
    default); `change(n, golden)` may give other answers before the golden one."""
    golden_steps = iter(enumerate(task.reference_solution if steps is None else steps))
    queued: list[Answer] = []

    def answer(messages: list[dict], request: dict) -> Answer:
        if not queued:
            index, step = next(golden_steps)
            golden = {"observation": copy.deepcopy(step.observation), "state_patch": copy.deepcopy(step.state_patch)}
            queued.extend([*(change(index, golden) if change else []), golden])
        return queued.pop(0)

    return scripted_model(answer, name=name)


async def play(episode: Episode, steps: Sequence[ReferenceStep], allow_errors: bool = False) -> list[StepOutcome]:
    """Calls each step's tool with its arguments; unless `allow_errors`, an error result stops the play
    with an AssertionError naming the step and its observation."""
    outcomes = []
    for index, step in enumerate(steps):
        outcome = await episode.step(step.tool, step.arguments)
        if outcome.is_error and not allow_errors:
            raise AssertionError(f"step {index} ({step.tool}): {json.dumps(outcome.observation)}")
        outcomes.append(outcome)
    return outcomes
