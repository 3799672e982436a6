"""The fault schedule: which calls of an episode fail, and how, decided from the seed alone."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from occusim.environments import FaultSettings, Task

EXPLICIT_LABELS = ("http_500", "timeout", "connection_refused", "service_unavailable")
IMPLICIT_LABELS = ("truncate_list", "drop_fields", "null_fields", "stale")
DEFAULT_HORIZON = 10

FaultKind = Literal["explicit", "implicit"]


@dataclass(frozen=True)
class PlannedFault:
    """The fault planned for one call: its kind, label and which window (0-based) it belongs to."""

    kind: FaultKind
    label: str
    window: int


@dataclass(frozen=True)
class FaultWindow:
    start: int
    stop: int  # exclusive
    kind: FaultKind
    label: str


def expected_horizon(task: Task) -> int:
    """How many calls an episode of this task is expected to take, to spread the faults over.

    The reference solution's length plus a little slack when there is one, otherwise a typical length;
    never more than the task's step limit.
    """
    planned = len(task.reference_solution) + 2 if task.reference_solution else DEFAULT_HORIZON
    return min(task.max_steps, planned)


class FaultSchedule:
    """Server-side fault injection plan for one episode.

    `count` windows of `duration` consecutive calls each, spread over the expected horizon (one window
    per equal segment), never on the first call (index 0). Faults are transient: the call after a window
    is always clean, so the same call succeeds when repeated. E1 windows are explicit errors, E2 implicit degradations, E3 alternates the two
    starting from a seeded coin flip. E0 and `prompt` have no server-side windows. The same settings and
    task id always give the same schedule.
    """

    def __init__(self, settings: FaultSettings, *, task_id: str, horizon: int = DEFAULT_HORIZON) -> None:
        self.settings = settings
        self.task_id = task_id
        # Leave room, after the first call, for every window plus one clean call behind it, even when the
        # expected horizon is short: two windows never touch, so each fault is visibly transient.
        self.horizon = max(horizon, settings.count * (settings.duration + 1) + 1)
        self.windows: tuple[FaultWindow, ...] = self._plan()

    @classmethod
    def for_task(cls, settings: FaultSettings, task: Task) -> FaultSchedule:
        return cls(settings, task_id=task.id, horizon=expected_horizon(task))

    def _plan(self) -> tuple[FaultWindow, ...]:
        mode, count, duration = self.settings.mode, self.settings.count, self.settings.duration
        if mode not in ("E1", "E2", "E3") or count == 0:
            return ()
        rng = random.Random(f"occusim-faults:{self.settings.seed}:{self.task_id}")
        slots = self.horizon - 1  # call indices 1 .. horizon-1
        explicit_first = rng.random() < 0.5
        windows = []
        for number in range(count):
            lo = 1 + (slots * number) // count
            hi = 1 + (slots * (number + 1)) // count
            start = lo + rng.randint(0, max(0, hi - lo - duration - 1))
            if mode == "E1":
                kind: FaultKind = "explicit"
            elif mode == "E2":
                kind = "implicit"
            else:
                kind = "explicit" if (number % 2 == 0) == explicit_first else "implicit"
            label = rng.choice(EXPLICIT_LABELS if kind == "explicit" else IMPLICIT_LABELS)
            windows.append(FaultWindow(start, start + duration, kind, label))
        return tuple(windows)

    def at(self, index: int) -> PlannedFault | None:
        """The fault planned for call `index` (0-based), or None for a clean call."""
        for number, window in enumerate(self.windows):
            if window.start <= index < window.stop:
                return PlannedFault(window.kind, window.label, number)
        return None

    def rng(self, index: int) -> random.Random:
        """A generator for the details of call `index` (which fields to drop...), reproducible from the seed."""
        return random.Random(f"occusim-fault-detail:{self.settings.seed}:{self.task_id}:{index}")

    def describe(self) -> list[dict[str, object]]:
        return [
            {"calls": list(range(w.start, w.stop)), "kind": w.kind, "label": w.label} for w in self.windows
        ]


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
