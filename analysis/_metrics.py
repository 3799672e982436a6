"""Run metrics: completion rates with 95 % intervals, paired robustness, pass@k and pass^k, judge abstentions
and ties, faults met, usage by role, simulator errors.

The formulas are written out in docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from math import comb
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from occusim.environments import Usage
from occusim.llm import sum_usage

from ._resampling import Interval, ratio_interval, robustness_interval
from ._results import ResultRow

FAULT_ORDER = ("E0", "E1", "E2", "E3", "prompt")
FAULTED_LEVELS = ("E1", "E2", "E3")
# The OccuBench level each fault mode injects: in `prompt` mode the world model injects both kinds, as in E3.
LEVEL_OF = {"E0": "E0", "E1": "E1", "E2": "E2", "E3": "E3", "prompt": "E3"}
ROLES = ("agent", "world_model", "judge")
# An episode whose judge could not decide: an infrastructure outcome, neither scored nor an infra_error.
UNJUDGED = "unjudged"


class Rate(BaseModel):
    """passed / total over scored episodes; `rate` is None when there is nothing to divide by."""

    passed: int = 0
    total: int = 0
    ci: Interval | None = Field(default=None, description="95 % bootstrap interval over tasks; None under 2 tasks.")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        return self.passed / self.total if self.total else None


class Share(BaseModel):
    """count / total of something other than passes (abstained votes, tied checks, short episodes)."""

    count: int = 0
    total: int = 0
    ci: Interval | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rate(self) -> float | None:
        return self.count / self.total if self.total else None


class Robustness(BaseModel):
    """min over the faulted modes of completion / E0 completion, over the tasks scored in every mode."""

    value: float | None
    note: str = Field(description="How it was computed, or why it is undefined.")
    ci: Interval | None = None
    tasks: int = Field(default=0, description="Tasks scored in E0 and in every faulted mode of the run.")
    partial: bool = Field(default=False, description="Some of the levels E1, E2, E3 have no scored episode.")
    missing: list[str] = Field(default_factory=list, description="The levels E1-E3 with no scored episode.")
    rates: dict[str, float] = Field(default_factory=dict, description="Completion per mode over those tasks.")
    unfaulted_left_out: int = Field(
        default=0, description="Scored E1-E3 episodes left out because they met none of their planned faults.")


class JudgeStats(BaseModel):
    """How often the LLM judge could not decide, over every judged episode (scored and unjudged)."""

    votes: int = Field(default=0, description="Votes cast on llm checks.")
    abstentions: Share = Field(default_factory=Share, description="Votes that gave no usable verdict.")
    ties: Share = Field(default_factory=Share, description="llm checks whose votes tied (not passed).")
    episodes_with_abstentions: int = 0


class FaultsMet(BaseModel):
    """Faults the episodes of one fault mode actually met."""

    episodes: int
    mean: float | None = Field(description="Faults met per scored episode.")
    counted: Literal["faults", "faulted calls"] = Field(
        description="'faulted calls' for rows that record only the labels of the calls a fault hit.")
    short: Share | None = Field(default=None, description="Episodes that met fewer faults than planned.")
    met_all: int | None = Field(default=None, description="Episodes that met every planned fault.")
    too_short: int = Field(default=0, description="Episodes that ended before their faults were due.")
    not_applicable: int = Field(
        default=0, description="Episodes whose calls offered a due implicit fault nothing it could degrade.")


class RunMetrics(BaseModel):
    episodes: int = Field(description="Combinations with a row (scored + unjudged + infra errors).")
    scored: int
    infra_errors: int
    unjudged: int = Field(default=0, description="Episodes the judge could not decide: neither scored nor failed.")
    completion: Rate
    by_category: dict[str, Rate] = Field(description="All fault modes pooled; see by_category_and_mode.")
    by_category_and_mode: dict[str, dict[str, Rate]]
    by_difficulty: dict[int, Rate]
    by_fault_mode: dict[str, Rate]
    mean_score: float | None
    robustness: Robustness
    pass_at_k: dict[int, float] = Field(description="Unbiased pass@k averaged over (task, fault mode) units.")
    pass_hat_k: dict[int, float] = Field(description="Unbiased pass^k averaged over (task, fault mode) units.")
    pass_at_k_ci: dict[int, Interval | None] = Field(default_factory=dict)
    pass_hat_k_ci: dict[int, Interval | None] = Field(default_factory=dict)
    judge: JudgeStats = Field(default_factory=JudgeStats)
    faults_met: dict[str, FaultsMet] = Field(default_factory=dict)
    usage_by_role: dict[str, Usage]
    steps: int
    simulator_error_steps: int
    simulator_error_rate: float | None
    simulator_error_ci: Interval | None = None
    infra_error_messages: list[str] = Field(default_factory=list)
    unjudged_messages: list[str] = Field(default_factory=list)

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


def fault_sorted(modes: Iterable[str]) -> list[str]:
    return sorted(modes, key=FAULT_ORDER.index)


def _by_task(rows: Iterable[ResultRow], value: Callable[[ResultRow], float],
             weight: Callable[[ResultRow], float]) -> tuple[list[float], list[float]]:
    """Per task (sorted by id, so the row order never changes an interval): sum of value, sum of weight."""
    sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in rows:
        sums[row.task_id][0] += value(row)
        sums[row.task_id][1] += weight(row)
    ordered = [sums[task] for task in sorted(sums)]
    return [top for top, _ in ordered], [bottom for _, bottom in ordered]


def rate_of(rows: list[ResultRow], *, interval: bool = True) -> Rate:
    """Completion over scored rows, with its 95 % interval from a bootstrap over their tasks."""
    passed = sum(int(bool(row.passed)) for row in rows)
    ci = ratio_interval(*_by_task(rows, lambda row: float(bool(row.passed)), lambda row: 1.0)) if interval else None
    return Rate(passed=passed, total=len(rows), ci=ci)


def rates_by(rows: Iterable[ResultRow], key: Callable[[ResultRow], Hashable], *, interval: bool = True) -> dict:
    """One Rate per value of `key`, over the given rows (callers pass scored rows only)."""
    groups: dict[Any, list[ResultRow]] = defaultdict(list)
    for row in rows:
        groups[key(row)].append(row)
    return {name: rate_of(group, interval=interval) for name, group in groups.items()}


def _mean(values: list[bool]) -> float:
    return sum(values) / len(values)


def robustness(rows: Iterable[ResultRow], *, interval: bool = True) -> Robustness:
    """min(faulted modes) / E0, as in OccuBench, over the tasks scored in E0 and in every faulted mode.

    Each task weighs the same: its completion in a mode is the share of its scored trials that passed.
    `prompt` rows count as E3. Partial when some of E1, E2, E3 has no scored episode. An E1-E3 episode
    that met none of its planned faults (too short, or its faults not applicable) ran clean, not under its
    mode: it is left out, and the count left out is given. One that met some is kept: it ended before
    the others because of how it went, and leaving it out would favour agents that stop at the first.
    """
    outcomes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    unfaulted = 0
    for row in rows:
        if row.scored and met_a_fault(row):
            outcomes[(row.task_id, row.fault_mode)].append(bool(row.passed))
        elif row.scored:
            unfaulted += 1
    robust = _robustness(outcomes, interval=interval)
    if unfaulted:
        robust.note += f"; {unfaulted} faulted-mode episode(s) left out, having met none of their faults"
    robust.unfaulted_left_out = unfaulted
    return robust


def met_a_fault(row: ResultRow) -> bool:
    """Whether the episode met a fault the server planned, when it planned any (rows that record no count,
    and modes whose faults the world model injects, are taken as met)."""
    planned, met = getattr(row, "faults_planned", None), getattr(row, "faults_met", None)
    return not planned or met is None or met >= 1


def _robustness(outcomes: dict[tuple[str, str], list[bool]], *, interval: bool) -> Robustness:
    modes = fault_sorted({mode for _, mode in outcomes})
    faulted = [mode for mode in modes if mode != "E0"]
    if "E0" not in modes:
        return Robustness(value=None, note="undefined: no scored E0 (clean) episodes to compare with")
    if not faulted:
        return Robustness(value=None, note="undefined: no scored E1, E2, E3 or prompt episodes")
    all_tasks = {task for task, _ in outcomes}
    tasks = sorted(task for task in all_tasks if all((task, mode) in outcomes for mode in modes))
    missing = [level for level in FAULTED_LEVELS if level not in {LEVEL_OF[mode] for mode in faulted}]
    partial = f"; partial: no scored {', '.join(missing)}" if missing else ""
    left_out = len(all_tasks) - len(tasks)
    dropped = f"; {left_out} task(s) left out, not scored in every mode" if left_out else ""
    as_e3 = "; prompt counted as E3" if "prompt" in faulted else ""
    base: dict[str, Any] = {"tasks": len(tasks), "partial": bool(missing), "missing": missing}
    if not tasks:
        return Robustness(value=None, note=f"undefined: no task was scored in every mode ({', '.join(modes)})",
                          **base)
    per_task = [[_mean(outcomes[(task, mode)]) for mode in modes] for task in tasks]
    rates = {mode: sum(values[i] for values in per_task) / len(tasks) for i, mode in enumerate(modes)}
    clean = rates["E0"]
    if clean == 0:
        return Robustness(value=None, note=f"undefined: the E0 completion rate over {len(tasks)} task(s) is 0"
                          + partial + dropped, rates=rates, **base)
    worst = min(faulted, key=rates.__getitem__)
    note = (f"min({', '.join(faulted)}) / E0 = {worst} {rates[worst]:.3f} / E0 {clean:.3f} over {len(tasks)} "
            f"task(s) scored in every mode{partial}{dropped}{as_e3}")
    return Robustness(value=rates[worst] / clean, note=note, ci=robustness_interval(per_task) if interval else None,
                      rates=rates, **base)


def _unbiased(rows: list[ResultRow], estimator: Callable[[int, int, int], float], *, interval: bool = True
              ) -> tuple[dict[int, float], dict[int, Interval | None]]:
    """The estimator per (task, fault mode) unit, averaged over units with at least k trials, for each k."""
    units: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for row in rows:
        units[(row.task_id, row.fault_mode)].append(bool(row.passed))
    means: dict[int, float] = {}
    intervals: dict[int, Interval | None] = {}
    for k in range(1, max((len(trials) for trials in units.values()), default=0) + 1):
        sums: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        for (task, _), trials in units.items():
            if len(trials) >= k:
                sums[task][0] += estimator(len(trials), sum(trials), k)
                sums[task][1] += 1
        ordered = [sums[task] for task in sorted(sums)]
        top, bottom = [value for value, _ in ordered], [count for _, count in ordered]
        means[k] = sum(top) / sum(bottom)
        intervals[k] = ratio_interval(top, bottom) if interval else None
    return means, intervals


def _checks(row: ResultRow) -> Iterable[Any]:
    if row.verdict is not None:
        for item in row.verdict.items:
            yield from item.checks


def judge_stats(rows: list[ResultRow], *, interval: bool = True) -> JudgeStats:
    """Votes, abstained votes and tied llm checks, read from each judged row's verdict."""
    judged = [row for row in rows if row.verdict is not None]

    def votes(row: ResultRow) -> float:
        return float(sum(len(check.votes) for check in _checks(row)))

    def llm_checks(row: ResultRow) -> float:
        return float(sum(1 for check in _checks(row) if check.votes))

    def abstained(row: ResultRow) -> float:
        return float(row.verdict.abstentions) if row.verdict else 0.0

    def ties(row: ResultRow) -> float:
        return float(len(row.verdict.ties)) if row.verdict else 0.0

    def share(count: Callable[[ResultRow], float], total: Callable[[ResultRow], float]) -> Share:
        return Share(count=int(sum(map(count, judged))), total=int(sum(map(total, judged))),
                     ci=ratio_interval(*_by_task(judged, count, total)) if interval else None)

    return JudgeStats(votes=int(sum(map(votes, judged))), abstentions=share(abstained, votes),
                      ties=share(ties, llm_checks),
                      episodes_with_abstentions=sum(1 for row in judged if abstained(row)))


def faults_met(row: ResultRow) -> int:
    """Faults the episode met; rows without `faults_met` give the number of calls a fault hit."""
    met = getattr(row, "faults_met", None)
    return len(row.faults_injected) if met is None else int(met)


def faults_met_by_mode(rows: list[ResultRow], *, interval: bool = True) -> dict[str, FaultsMet]:
    out = {}
    for mode in fault_sorted({row.fault_mode for row in rows}):
        group = [row for row in rows if row.fault_mode == mode]
        planned = [getattr(row, "faults_planned", None) for row in group]
        recorded = all(getattr(row, "faults_met", None) is not None for row in group)
        short = None
        if recorded and all(value is not None for value in planned):
            def fell_short(row: ResultRow) -> float:
                return float(faults_met(row) < getattr(row, "faults_planned", 0))

            short = Share(count=int(sum(map(fell_short, group))), total=len(group),
                          ci=ratio_interval(*_by_task(group, fell_short, lambda row: 1.0)) if interval else None)
        out[mode] = FaultsMet(episodes=len(group), mean=sum(map(faults_met, group)) / len(group),
                              counted="faults" if recorded else "faulted calls", short=short,
                              met_all=len(group) - int(short.count) if short is not None else None,
                              too_short=sum(1 for row in group if row.too_short_for_faults),
                              not_applicable=sum(1 for row in group if row.faults_not_applicable))
    return out


def _episode(row: ResultRow) -> str:
    return f"{row.task_id} {row.fault_mode} trial {row.trial}: {row.error}"


def compute_metrics(rows: Iterable[ResultRow], *, intervals: bool = True) -> RunMetrics:
    """Metrics over one row per combination. Infra-error and unjudged rows count only apart and in usage.

    `intervals=False` leaves every interval out (None): the bootstraps are most of the cost, which a summary
    that prints none need not pay."""
    rows = list(rows)
    scored = [row for row in rows if row.scored]
    failed = [row for row in rows if row.status == "infra_error"]
    unjudged = [row for row in rows if row.status == UNJUDGED]
    by_mode = rates_by(scored, lambda row: row.fault_mode, interval=intervals)
    cells = rates_by(scored, lambda row: (row.category, row.fault_mode), interval=intervals)
    by_category_and_mode: dict[str, dict[str, Rate]] = defaultdict(dict)
    for category, mode in sorted(cells, key=lambda cell: (cell[0], FAULT_ORDER.index(cell[1]))):
        by_category_and_mode[category][mode] = cells[category, mode]
    steps = sum(row.steps for row in scored)
    simulator_errors = sum(row.simulator_errors for row in scored)
    scores = [row.score for row in scored if row.score is not None]
    pass_at, pass_at_ci = _unbiased(scored, pass_at_k, interval=intervals)
    pass_hat, pass_hat_ci = _unbiased(scored, pass_hat_k, interval=intervals)
    return RunMetrics(
        episodes=len(rows),
        scored=len(scored),
        infra_errors=len(failed),
        unjudged=len(unjudged),
        completion=rate_of(scored, interval=intervals),
        by_category=dict(sorted(rates_by(scored, lambda row: row.category, interval=intervals).items())),
        by_category_and_mode=dict(by_category_and_mode),
        by_difficulty=dict(sorted(rates_by(scored, lambda row: row.difficulty, interval=intervals).items())),
        by_fault_mode={mode: by_mode[mode] for mode in fault_sorted(by_mode)},
        mean_score=sum(scores) / len(scores) if scores else None,
        robustness=robustness(scored, interval=intervals),
        pass_at_k=pass_at,
        pass_hat_k=pass_hat,
        pass_at_k_ci=pass_at_ci,
        pass_hat_k_ci=pass_hat_ci,
        judge=judge_stats(scored + unjudged, interval=intervals),
        faults_met=faults_met_by_mode(scored, interval=intervals),
        usage_by_role={role: sum_usage(row.usage.get(role, Usage()) for row in rows) for role in ROLES},
        steps=steps,
        simulator_error_steps=simulator_errors,
        simulator_error_rate=simulator_errors / steps if steps else None,
        simulator_error_ci=ratio_interval(*_by_task(scored, lambda row: float(row.simulator_errors),
                                                    lambda row: float(row.steps))) if intervals else None,
        infra_error_messages=[_episode(row) for row in failed],
        unjudged_messages=[_episode(row) for row in unjudged],
    )
