"""Resampling statistics: 95 % intervals from a bootstrap over tasks, and the paired sign-flip permutation test.

Trials of one task share the task's difficulty, so they are not independent: every resample draws whole
tasks (clusters). Each call seeds its own generator, so the same rows always give the same figures.
"""

from __future__ import annotations

from itertools import product
from typing import TYPE_CHECKING

from pydantic import BaseModel

if TYPE_CHECKING:  # each function that computes imports numpy (0.1 s): a run's summary, without intervals, needs none
    import numpy as np

RESAMPLES = 2000
SEED = 0
LEVEL = 0.95
# Up to 2**16 sign patterns the permutation test enumerates them all (an exact p-value); above, it samples.
EXACT_FLIPS = 16
PERMUTATIONS = 20000


class Interval(BaseModel):
    """A percentile bootstrap interval."""

    low: float
    high: float


def _percentile(values: np.ndarray) -> Interval | None:
    import numpy as np

    values = values[np.isfinite(values)]
    # A statistic undefined in most resamples (0/0) has no interval worth printing.
    if values.size < RESAMPLES / 2:
        return None
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return Interval(low=float(low), high=float(high))


def _draws(clusters: int, seed: int) -> np.ndarray:
    import numpy as np

    return np.random.default_rng(seed).integers(0, clusters, size=(RESAMPLES, clusters))


def ratio_interval(numerators: list[float], denominators: list[float], *, seed: int = SEED) -> Interval | None:
    """Interval of sum(numerators) / sum(denominators), one entry per task, resampling tasks.

    A completion rate is passed/scored episodes per task; a mean over units is value-sum/unit-count. None
    with fewer than two tasks: one task says nothing about the spread between tasks.
    """
    import numpy as np

    if len(numerators) != len(denominators):
        raise ValueError("one numerator and one denominator per task")
    if len(numerators) < 2:
        return None
    draws = _draws(len(numerators), seed)
    top = np.asarray(numerators, dtype=float)[draws].sum(axis=1)
    bottom = np.asarray(denominators, dtype=float)[draws].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _percentile(top / bottom)


def robustness_interval(per_task: list[list[float]], *, seed: int = SEED) -> Interval | None:
    """Interval of min(column 1.., mean over tasks) / column 0's mean; `per_task` has one row per task.

    Column 0 is each task's E0 completion, the others its completion under each faulted mode. Resamples
    in which E0's mean is 0 (robustness undefined) are left out.
    """
    import numpy as np

    if len(per_task) < 2:
        return None
    means = np.asarray(per_task, dtype=float)[_draws(len(per_task), seed)].mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _percentile(means[:, 1:].min(axis=1) / means[:, 0])


def sign_flip_p_value(differences: list[float], *, seed: int = SEED) -> float:
    """Two-sided p-value of a zero mean for paired per-task differences, by flipping each task's sign.

    Under the null hypothesis the two runs are exchangeable within a task, so each task's difference is
    as likely to have either sign. Exact (all sign patterns) for up to EXACT_FLIPS non-zero differences,
    else PERMUTATIONS random patterns, counting the observed one, as (hits + 1) / (PERMUTATIONS + 1).
    """
    import numpy as np

    values = np.asarray([value for value in differences if value != 0], dtype=float)
    if values.size == 0:
        return 1.0
    observed = abs(values.sum())
    # Sums of the same floats in another order can differ in the last bits.
    tolerance = 1e-9 * max(1.0, float(np.abs(values).sum()))
    if values.size <= EXACT_FLIPS:
        signs = np.array(list(product((1.0, -1.0), repeat=values.size)))
        return float(np.mean(np.abs(signs @ values) >= observed - tolerance))
    signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(PERMUTATIONS, values.size))
    hits = int(np.sum(np.abs(signs @ values) >= observed - tolerance))
    return (hits + 1) / (PERMUTATIONS + 1)
