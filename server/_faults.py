"""The fault schedule: which calls of an episode fail, and how, decided from the seed and the calls so far."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from occusim.environments import FaultSettings, StepRecord, Task

EXPLICIT_LABELS = ("http_500", "timeout", "connection_refused", "service_unavailable")
IMPLICIT_LABELS = ("truncate_list", "drop_fields", "null_fields", "stale")

FaultKind = Literal["explicit", "implicit"]
_SERVER_KINDS = ("explicit", "implicit")


@dataclass(frozen=True)
class PlannedFault:
    """One fault of the plan: its kind, the label tried first and its number (0-based) in the episode."""

    kind: FaultKind
    label: str
    window: int


@dataclass(frozen=True)
class FaultTally:
    """How many faults an episode was meant to meet, and how many it met (entered at least one call of)."""

    planned: int
    met: int
    calls_needed: int

    @property
    def too_short(self) -> bool:
        """The episode ended before meeting every planned fault: too few calls could carry one."""
        return self.met < self.planned


class FaultSchedule:
    """Server-side fault plan for one episode, placed on the fly so that short episodes meet it too.

    The plan is `count` faults, each carried by `duration` successive calls. E1 faults are explicit
    errors, E2 implicit degradations, E3 alternates the two starting from a seeded coin flip; each fault's
    label comes from the seed. E0 and `prompt` have no server-side faults. Where the faults fall is read
    from the steps recorded so far: a fault starts at the first call that may carry one, which is never
    the first call (index 0) and never the call right after a fault (faults are transient: a call
    repeated after its fault succeeds). A call that cannot carry its fault (invalid arguments, the world
    model gave no answer, an implicit fault on an error answer or on one nothing can degrade) leaves it
    to the next call. So every episode of `calls_needed` calls or more that could all carry a fault
    meets every fault, for its full duration, and an E3 episode with two faults or more meets both
    kinds. Faults start as early as these rules allow rather than at seeded places: how long an
    episode will run is unknown when a fault must be placed, and any delay lets short episodes miss it.
    The same settings, task id and calls always give the same faults.
    """

    def __init__(self, settings: FaultSettings, *, task_id: str) -> None:
        self.settings = settings
        self.task_id = task_id
        self.faults: tuple[PlannedFault, ...] = self._plan()

    @classmethod
    def for_task(cls, settings: FaultSettings, task: Task) -> FaultSchedule:
        return cls(settings, task_id=task.id)

    @property
    def calls_needed(self) -> int:
        """The fewest calls that meet every fault in full: a clean first call, each fault, a clean call between."""
        if not self.faults:
            return 0
        return 1 + len(self.faults) * self.settings.duration + len(self.faults) - 1

    def _plan(self) -> tuple[PlannedFault, ...]:
        mode, count = self.settings.mode, self.settings.count
        if mode not in ("E1", "E2", "E3") or count == 0:
            return ()
        rng = random.Random(f"occusim-faults:{self.settings.seed}:{self.task_id}")
        explicit_first = rng.random() < 0.5
        faults = []
        for number in range(count):
            if mode == "E1":
                kind: FaultKind = "explicit"
            elif mode == "E2":
                kind = "implicit"
            else:
                kind = "explicit" if (number % 2 == 0) == explicit_first else "implicit"
            label = rng.choice(EXPLICIT_LABELS if kind == "explicit" else IMPLICIT_LABELS)
            faults.append(PlannedFault(kind, label, number))
        return tuple(faults)

    def next_fault(self, steps: Sequence[StepRecord]) -> PlannedFault | None:
        """The fault the next call should carry, given the episode's recorded `steps`; None for a clean call."""
        if not self.faults or not steps:
            return None
        number, progress = divmod(_carried(steps), self.settings.duration)
        if progress:
            return self.faults[number]
        if number >= len(self.faults) or carries_fault(steps[-1]):
            return None
        return self.faults[number]

    def tally(self, steps: Sequence[StepRecord]) -> FaultTally:
        """How many planned faults the calls in `steps` met."""
        entered = -(-_carried(steps) // self.settings.duration)
        return FaultTally(planned=len(self.faults), met=min(entered, len(self.faults)), calls_needed=self.calls_needed)

    def rng(self, index: int) -> random.Random:
        """A generator for the details of call `index` (which fields to drop...), reproducible from the seed."""
        return random.Random(f"occusim-fault-detail:{self.settings.seed}:{self.task_id}:{index}")


def carries_fault(step: StepRecord) -> bool:
    """Whether the server injected a fault into this step (faults a prompted simulator made up are not counted)."""
    return step.fault is not None and step.fault.kind in _SERVER_KINDS


def _carried(steps: Sequence[StepRecord]) -> int:
    return sum(1 for step in steps if carries_fault(step))


def fault_tally(settings: FaultSettings, task_id: str, steps: Sequence[StepRecord]) -> FaultTally:
    """How many faults an episode with these settings was meant to meet, and how many its steps met."""
    return FaultSchedule(settings, task_id=task_id).tally(steps)


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
