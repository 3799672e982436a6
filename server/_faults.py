"""The fault schedule: which calls of an episode fail, and how, decided from the seed and the calls so far."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from occusim.environments import FaultSettings, StepRecord, Task

from ._fault_window import expected_calls, fault_window

EXPLICIT_LABELS = ("http_500", "timeout", "connection_refused", "service_unavailable")
IMPLICIT_LABELS = ("truncate_list", "drop_fields", "null_fields", "stale")

FaultKind = Literal["explicit", "implicit"]
_SERVER_KINDS = ("explicit", "implicit")


@dataclass(frozen=True)
class PlannedFault:
    """One fault of the plan: its kind, the label tried first, its number (0-based) in the episode, the call
    it starts on when every call can carry it, and the clean calls before it (after the previous fault)."""

    kind: FaultKind
    label: str
    number: int
    start: int
    gap: int


@dataclass(frozen=True)
class FaultTally:
    """How many faults an episode was meant to meet, how many it met (entered at least one call of), and
    why it missed the others: it ended first (too short), or the calls offered the fault had observations
    it could not degrade (not applicable)."""

    planned: int
    met: int
    calls_needed: int
    window: int = 0
    refused: int = 0

    @property
    def not_applicable(self) -> bool:
        """A planned fault was due, but every call offered it had an answer it could not degrade."""
        return self.met < self.planned and self.refused > 0

    @property
    def too_short(self) -> bool:
        """The episode ended before meeting every planned fault, without a call refusing one."""
        return self.met < self.planned and not self.not_applicable


class FaultSchedule:
    """Server-side fault plan for one episode, its places drawn from the seed within the task's window.

    The plan is `count` faults, each carried by `duration` successive calls. E1 faults are explicit
    errors, E2 implicit degradations, E3 alternates the two starting from a seeded coin flip; each fault's
    label comes from the seed. E0 and `prompt` have no server-side faults.

    Where the faults fall: the window is the task's expected length (its reference solution's steps,
    OccuBench's plan steps, or the `window` setting), at least twice `calls_needed`. Its calls after the
    first are cut into `count` equal stretches, one per fault, and each fault's start is drawn from the
    seed (which differs by trial) uniformly among the places in its stretch that leave the stretch's last
    call clean: faults are spread over the episode, never on the first call, never back to back. A call that cannot carry its fault
    (invalid arguments, the world model gave no answer, an implicit fault on an error answer or on one
    nothing can degrade) leaves it to the next call, and the clean calls planned after that fault follow
    it. So every episode of `window` calls that could all carry a fault meets every fault for its full
    duration, at the drawn places; each call that could not carry a due fault adds one call to that.
    The same settings, task and calls always give the same faults.
    """

    def __init__(self, settings: FaultSettings, *, task_id: str, expected: int = 0, max_steps: int | None = None) -> None:
        self.settings = settings
        self.task_id = task_id
        self.window = fault_window(self._needed(), expected=expected, setting=settings.window, max_steps=max_steps)
        self.faults: tuple[PlannedFault, ...] = self._plan()

    @classmethod
    def for_task(cls, settings: FaultSettings, task: Task) -> FaultSchedule:
        return cls(settings, task_id=task.id, expected=expected_calls(task), max_steps=task.max_steps)

    @property
    def calls_needed(self) -> int:
        """The fewest calls that meet every fault in full: a clean first call, each fault, a clean call between."""
        return self._needed() if self.faults else 0

    def _needed(self) -> int:
        if self.settings.mode not in ("E1", "E2", "E3") or self.settings.count == 0:
            return 0
        return self.settings.count * (self.settings.duration + 1)

    def _plan(self) -> tuple[PlannedFault, ...]:
        mode, count, duration = self.settings.mode, self.settings.count, self.settings.duration
        if self._needed() == 0:
            return ()
        rng = random.Random(f"occusim-faults:{self.settings.seed}:{self.task_id}")
        explicit_first = rng.random() < 0.5
        kinds_labels = []
        for number in range(count):
            if mode == "E1":
                kind: FaultKind = "explicit"
            elif mode == "E2":
                kind = "implicit"
            else:
                kind = "explicit" if (number % 2 == 0) == explicit_first else "implicit"
            kinds_labels.append((kind, rng.choice(EXPLICIT_LABELS if kind == "explicit" else IMPLICIT_LABELS)))
        starts = _draw_starts(random.Random(f"occusim-fault-places:{self.settings.seed}:{self.task_id}"),
                              count=count, duration=duration, window=self.window)
        faults, previous_end = [], 0
        for number, ((kind, label), drawn) in enumerate(zip(kinds_labels, starts, strict=True)):
            # Stretches are shorter than a fault and its clean call only when max_steps narrowed the window.
            start = max(drawn, previous_end + 1)
            faults.append(PlannedFault(kind, label, number, start, start - previous_end))
            previous_end = start + duration
        return tuple(faults)

    def next_fault(self, steps: Sequence[StepRecord]) -> PlannedFault | None:
        """The fault the next call should carry, given the episode's recorded `steps`; None for a clean call."""
        return self._walk(steps).due()

    def tally(self, steps: Sequence[StepRecord]) -> FaultTally:
        """How many planned faults the calls in `steps` met, and how many calls refused a due fault."""
        walk = self._walk(steps)
        met = min(-(-walk.carried // self.settings.duration), len(self.faults)) if self.faults else 0
        refused = walk.refused.get(met, 0) if met < len(self.faults) else 0
        return FaultTally(planned=len(self.faults), met=met, calls_needed=self.calls_needed,
                          window=self.window if self.faults else 0, refused=refused)

    def _walk(self, steps: Sequence[StepRecord]) -> _Walk:
        walk = _Walk(self.faults, self.settings.duration)
        for step in steps:
            walk.take(step)
        return walk

    def rng(self, index: int) -> random.Random:
        """A generator for the details of call `index` (which fields to drop...), reproducible from the seed."""
        return random.Random(f"occusim-fault-detail:{self.settings.seed}:{self.task_id}:{index}")


class _Walk:
    """The schedule's progress through recorded steps: faults carried, where the last one was, refusals."""

    def __init__(self, faults: tuple[PlannedFault, ...], duration: int) -> None:
        self.faults, self.duration = faults, duration
        self.calls = self.carried = 0
        self.last_carried = -1
        self.refused: dict[int, int] = {}

    def due(self) -> PlannedFault | None:
        if not self.faults:
            return None
        number, progress = divmod(self.carried, self.duration)
        if progress:
            return self.faults[number]
        if number >= len(self.faults):
            return None
        fault = self.faults[number]
        return fault if self.calls - (self.last_carried + 1) >= fault.gap else None

    def take(self, step: StepRecord) -> None:
        due = self.due()
        if carries_fault(step):
            self.carried += 1
            self.last_carried = self.calls
        elif due is not None and due.kind == "implicit" and step.error is None:
            # The world model answered, but nothing in the answer could be degraded.
            self.refused[due.number] = self.refused.get(due.number, 0) + 1
        self.calls += 1


def _draw_starts(rng: random.Random, *, count: int, duration: int, window: int) -> list[int]:
    """Fault starts spread over the window: calls 1 to window - 1 cut into `count` equal stretches, one fault
    each, starting anywhere in its stretch that leaves the stretch's last call clean (but the last fault's)."""
    bounds = [1 + number * (window - 1) // count for number in range(count + 1)]
    starts = []
    for number in range(count):
        room = bounds[number + 1] - bounds[number] - duration - (0 if number == count - 1 else 1)
        starts.append(bounds[number] + rng.randint(0, max(0, room)))
    return starts


def carries_fault(step: StepRecord) -> bool:
    """Whether the server injected a fault into this step (faults a prompted simulator made up are not counted)."""
    return step.fault is not None and step.fault.kind in _SERVER_KINDS


def fault_tally(settings: FaultSettings, task: Task, steps: Sequence[StepRecord]) -> FaultTally:
    """How many faults an episode with these settings was meant to meet, and how many its steps met."""
    return FaultSchedule.for_task(settings, task).tally(steps)


def fault_rules(settings: FaultSettings) -> str | None:
    """Fault instructions appended to the simulator prompt in `prompt` mode (the model injects the faults)."""
    if settings.mode != "prompt" or settings.count == 0:
        return None
    return (
        "### Fault injection\n"
        f"During this episode, inject exactly {settings.count} faults into the observations, each lasting "
        f"{settings.duration} consecutive tool calls, spread over the episode and never on the first call. "
        "After a fault's calls are over, the same call must succeed again (faults are transient).\n"
        "Alternate between the two kinds:\n"
        '- explicit: the call fails visibly, e.g. {"error": {"type": "http_error", "status": 500, '
        '"message": "Internal Server Error"}}, a timeout, a refused connection or "503 Service Unavailable"; '
        "the state does not change.\n"
        "- implicit: the call seems to succeed but the observation is degraded: a list cut to one or two "
        "items, optional fields missing, non-critical fields set to null, or the previous (stale) answer of "
        "the same tool repeated. The true state still changes as the call requires.\n"
        "Never say that a fault was injected."
    )
