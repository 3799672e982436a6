"""Paired comparison of two runs: completion differences per fault mode over the (task, mode) pairs both scored.

The formulas are written out in docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field, computed_field

from ._metrics import fault_sorted
from ._provenance import provenance_changes
from ._resampling import Interval, ratio_interval, sign_flip_p_value
from ._results import IDENTITY_FIELDS, ResultRow, RunConfig, load_rows
from ._run_differences import run_differences

ALPHA = 0.05
TEST = "two-sided sign-flip permutation test on per-task differences (exact up to 16 tasks that differ)"
# Settings that may differ between two runs compared for their agents; any other difference is reported.
_AGENT_FIELDS = ("agent_model", "agent_temperature")


class Difference(BaseModel):
    """Completion of run A minus run B over the tasks both scored in one fault mode (or in all, 'all')."""

    mode: str
    tasks: int
    pairs: int = Field(description="(task, fault mode) pairs: equal to tasks within one mode.")
    rate_a: float
    rate_b: float
    difference: float
    ci: Interval | None
    p_value: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def significant(self) -> bool:
        return self.p_value < ALPHA


class RunComparison(BaseModel):
    run_a: str
    run_b: str
    agent_a: str
    agent_b: str
    modes: list[Difference]
    overall: Difference | None
    pairs: int = Field(description="(task, fault mode) pairs scored in both runs.")
    only_a: int = Field(description="Pairs scored in run A only, dropped.")
    only_b: int = Field(description="Pairs scored in run B only, dropped.")
    other_differences: list[str] = Field(description="Settings other than the agent's that differ between runs.")
    differences: list[str] = Field(
        default_factory=list,
        description="Every setting and provenance entry that differs between the runs, the agent's included.",
    )
    test: str = TEST


def unit_completion(rows: Iterable[ResultRow]) -> dict[tuple[str, str], float]:
    """Each (task, fault mode) pair's completion: the share of its scored trials that passed."""
    trials: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row in rows:
        if row.scored:
            trials[(row.task_id, row.fault_mode)].append(bool(row.passed))
    return {unit: sum(values) / len(values) for unit, values in trials.items()}


def _difference(mode: str, units: list[tuple[str, float, float]]) -> Difference:
    """`units`: (task, A's completion, B's completion) for each pair; tasks are the resampled clusters."""
    by_task: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for task, a, b in units:
        by_task[task][0] += a - b
        by_task[task][1] += 1
    ordered = [by_task[task] for task in sorted(by_task)]
    sums, counts = [total for total, _ in ordered], [count for _, count in ordered]
    rate_a = sum(a for _, a, _ in units) / len(units)
    rate_b = sum(b for _, _, b in units) / len(units)
    return Difference(mode=mode, tasks=len(by_task), pairs=len(units), rate_a=rate_a, rate_b=rate_b,
                      difference=rate_a - rate_b, ci=ratio_interval(sums, counts), p_value=sign_flip_p_value(sums))


def _other_differences(a: RunConfig, b: RunConfig) -> list[str]:
    changed = [name for name in IDENTITY_FIELDS if name not in _AGENT_FIELDS and getattr(a, name) != getattr(b, name)]
    differences = [f"{name}: {getattr(a, name)!r} vs {getattr(b, name)!r}" for name in changed]
    prompts = provenance_changes(a.provenance, b.provenance)
    # The agent's own prompt is part of what is compared.
    return differences + [line.replace(" -> ", " vs ") for line in prompts if not line.startswith("prompt_versions[agent]")]


def compare_rows(config_a: RunConfig, rows_a: list[ResultRow], config_b: RunConfig, rows_b: list[ResultRow], *,
                 run_a: str = "A", run_b: str = "B") -> RunComparison:
    """Compare two runs' completion over the (task, fault mode) pairs both scored."""
    a, b = unit_completion(rows_a), unit_completion(rows_b)
    shared = sorted(a.keys() & b.keys())
    modes = []
    for mode in fault_sorted({mode for _, mode in shared}):
        modes.append(_difference(mode, [(task, a[task, m], b[task, m]) for task, m in shared if m == mode]))
    overall = _difference("all", [(task, a[task, m], b[task, m]) for task, m in shared]) if shared else None
    return RunComparison(run_a=run_a, run_b=run_b, agent_a=config_a.agent_model, agent_b=config_b.agent_model,
                         modes=modes, overall=overall, pairs=len(shared), only_a=len(a.keys() - b.keys()),
                         only_b=len(b.keys() - a.keys()), other_differences=_other_differences(config_a, config_b),
                         differences=run_differences(config_a, config_b))


def compare_runs(run_a: str | Path, run_b: str | Path) -> RunComparison:
    """Compare two run folders; raises RunError when one is not a run folder."""
    config_a, rows_a = load_rows(run_a)
    config_b, rows_b = load_rows(run_b)
    return compare_rows(config_a, rows_a, config_b, rows_b, run_a=str(run_a), run_b=str(run_b))
