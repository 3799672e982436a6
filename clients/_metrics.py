"""Run metrics: completion rates, OccuBench robustness, pass@k and pass^k, usage by role, simulator errors.

The formulas are written out in docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Mapping
from math import comb

from pydantic import BaseModel, Field, computed_field

from occusim.environments import Usage
from occusim.llm import sum_usage

from ._results import ResultRow

FAULT_ORDER = ("E0", "E1", "E2", "E3", "prompt")
ROLES = ("agent", "world_model", "judge")


class Rate(BaseModel):
    """passed / total over scored episodes; `rate` is None when there is nothing to divide by."""

    passed: int = 0
    total: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


class Robustness(BaseModel):
    value: float | None
    note: str = Field(description="How it was computed, or why it is undefined.")


class RunMetrics(BaseModel):
    episodes: int = Field(description="Combinations with a row (scored + infra errors).")
    scored: int
    infra_errors: int
    completion: Rate
    by_category: dict[str, Rate]
    by_difficulty: dict[int, Rate]
    by_fault_mode: dict[str, Rate]
    mean_score: float | None
    robustness: Robustness
    pass_at_k: dict[int, float] = Field(description="Unbiased pass@k averaged over (task, fault mode) units.")
    pass_hat_k: dict[int, float] = Field(description="Unbiased pass^k averaged over (task, fault mode) units.")
    usage_by_role: dict[str, Usage]
    steps: int
    simulator_error_steps: int
    simulator_error_rate: float | None
    infra_error_messages: list[str] = Field(default_factory=list)

    def rate_table(self, name: str) -> dict[str, Rate]:
        table = getattr(self, name)
        return {str(key): value for key, value in table.items()}


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k trials drawn without replacement from n (c passed) passes."""
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all k trials drawn without replacement from n (c passed) pass."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not 0 <= c <= n:
        raise ValueError(f"passed trials c={c} must be between 0 and n={n}")
    if not 1 <= k <= n:
        raise ValueError(f"k={k} must be between 1 and the number of trials n={n}")


def robustness(by_mode: Mapping[str, float | None]) -> Robustness:
    """min(E1, E2, E3) / E0 over the fault modes present, as in OccuBench."""
    clean = by_mode.get("E0")
    faulted: dict[str, float] = {
        mode: value for mode in ("E1", "E2", "E3") if (value := by_mode.get(mode)) is not None
    }
    if clean is None:
        return Robustness(value=None, note="undefined: no scored E0 (clean) episodes to compare with")
    if not faulted:
        return Robustness(value=None, note="undefined: no scored E1, E2 or E3 episodes")
    if clean == 0:
        return Robustness(value=None, note="undefined: the E0 completion rate is 0")
    worst = min(faulted, key=faulted.__getitem__)
    modes = ", ".join(faulted)
    return Robustness(value=faulted[worst] / clean,
                      note=f"min({modes}) / E0 = {worst} {faulted[worst]:.3f} / E0 {clean:.3f}")


def rates_by(rows: Iterable[ResultRow], key: Callable[[ResultRow], Hashable]) -> dict:
    """One Rate per value of `key`, over the given rows (callers pass scored rows only)."""
    table: dict = defaultdict(Rate)
    for row in rows:
        rate = table[key(row)]
        rate.total += 1
        rate.passed += int(bool(row.passed))
    return dict(table)


def _fault_sorted(table: dict[str, Rate]) -> dict[str, Rate]:
    return dict(sorted(table.items(), key=lambda item: FAULT_ORDER.index(item[0])))


def _unbiased(rows: list[ResultRow], estimator: Callable[[int, int, int], float]) -> dict[int, float]:
    units: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row in rows:
        units[(row.task_id, row.fault_mode)].append(bool(row.passed))
    if not units:
        return {}
    out = {}
    for k in range(1, max(len(trials) for trials in units.values()) + 1):
        values = [estimator(len(trials), sum(trials), k) for trials in units.values() if len(trials) >= k]
        out[k] = sum(values) / len(values)
    return out


def compute_metrics(rows: Iterable[ResultRow]) -> RunMetrics:
    """Metrics over one row per combination. Infra-error rows count only in `infra_errors` and usage."""
    rows = list(rows)
    scored = [row for row in rows if row.scored]
    failed = [row for row in rows if not row.scored]
    by_mode = _fault_sorted(rates_by(scored, lambda row: row.fault_mode))
    steps = sum(row.steps for row in scored)
    simulator_errors = sum(row.simulator_errors for row in scored)
    scores = [row.score for row in scored if row.score is not None]
    return RunMetrics(
        episodes=len(rows),
        scored=len(scored),
        infra_errors=len(failed),
        completion=Rate(passed=sum(int(bool(row.passed)) for row in scored), total=len(scored)),
        by_category=dict(sorted(rates_by(scored, lambda row: row.category).items())),
        by_difficulty=dict(sorted(rates_by(scored, lambda row: row.difficulty).items())),
        by_fault_mode=by_mode,
        mean_score=sum(scores) / len(scores) if scores else None,
        robustness=robustness({mode: rate.rate for mode, rate in by_mode.items()}),
        pass_at_k=_unbiased(scored, pass_at_k),
        pass_hat_k=_unbiased(scored, pass_hat_k),
        usage_by_role={role: sum_usage(row.usage.get(role, Usage()) for row in rows) for role in ROLES},
        steps=steps,
        simulator_error_steps=simulator_errors,
        simulator_error_rate=simulator_errors / steps if steps else None,
        infra_error_messages=[f"{row.task_id} {row.fault_mode} trial {row.trial}: {row.error}" for row in failed],
    )
