"""The per-step audit over a run: flags per 100 steps, by world model and by scenario (docs/metrics.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from ._results import ResultRow


@dataclass
class AuditRate:
    """Flags over the audited steps of a group of episodes; `skipped` counts steps whose state checks were
    skipped (history mode), `unaudited` steps not audited at all."""

    steps: int = 0
    flags: int = 0
    flagged_steps: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    skipped: int = 0
    unaudited: int = 0

    @property
    def per_100_steps(self) -> float | None:
        return 100 * self.flags / self.steps if self.steps else None


def audit_rates(rows: list[ResultRow], key: Callable[[ResultRow], str]) -> dict[str, AuditRate]:
    """Every episode that ran (infrastructure errors aside), grouped by `key`."""
    rates: dict[str, AuditRate] = {}
    for row in rows:
        if row.status == "infra_error":
            continue
        rate = rates.setdefault(key(row), AuditRate())
        if row.audited is None:
            rate.unaudited += row.steps
            continue
        if row.audited == "no_state":
            rate.skipped += row.steps
        rate.steps += row.steps
        for step in row.flagged_steps:
            rate.flagged_steps += 1
            rate.flags += len(step.flags)
            rate.by_kind.update(flag.kind.value for flag in step.flags)
    return dict(sorted(rates.items()))
