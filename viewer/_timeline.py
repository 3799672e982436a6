"""An episode's steps as the timeline shows them: the call, what was shown and the truth, the state after."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from occusim.environments import EpisodeRecord, PatchError, StepRecord, apply_json_patch

from ._diff import DiffRow, pretty, side_by_side


@dataclass(frozen=True)
class StepView:
    step: StepRecord
    arguments: str
    shown: str
    diff: list[DiffRow] = field(default_factory=list)
    patch: str = ""
    state_after: str | None = None
    state_problem: str | None = None  # on the step whose recorded patch did not apply
    flags: list[dict[str, Any]] = field(default_factory=list)


def step_flags(step: StepRecord) -> list[dict[str, Any]]:
    """The simulator audit's flags on a step (kind, detail, path), for records that carry them."""
    found = getattr(step, "flags", None) or []
    return [flag.model_dump(mode="json") if hasattr(flag, "model_dump") else dict(flag) for flag in found]


def timeline(record: EpisodeRecord) -> list[StepView]:
    """Each step with the state after it, replayed from the initial state by the recorded patches."""
    views = []
    state: Any = copy.deepcopy(record.initial_state)
    broken: str | None = None
    for step in record.steps:
        problem = None
        if broken is None and step.state_patch:
            try:
                state = apply_json_patch(state, step.state_patch)
            except PatchError as error:
                broken = problem = f"the state cannot be replayed from step {step.index} on: {error}"
        diff = side_by_side(step.observation, step.true_observation) if step.true_observation is not None else []
        views.append(StepView(
            step=step,
            arguments=step.raw_arguments if step.raw_arguments is not None and not step.arguments
            else pretty(step.arguments),
            shown=pretty(step.observation),
            diff=diff,
            patch=pretty(step.state_patch) if step.state_patch else "",
            # Shown where the state moved (a protocol that tracks no state records no patch): a page of a long
            # episode repeats no unchanged state.
            state_after=pretty(state) if step.state_patch and broken is None else None,
            state_problem=problem,
            flags=step_flags(step),
        ))
    return views
