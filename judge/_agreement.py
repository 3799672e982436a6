"""Agreement between two raters (the judge and a labeller, or two reviewers): raw agreement and Cohen's kappa
on binary verdicts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Agreement:
    """How often two raters agree on pass/fail, and how much better than chance (Cohen's kappa).

    Counts are (judge, expert), the expert being whoever labelled: both_pass, both_fail, judge_only (judge
    pass, expert fail), expert_only.
    """

    both_pass: int = 0
    both_fail: int = 0
    judge_only: int = 0
    expert_only: int = 0

    @property
    def total(self) -> int:
        return self.both_pass + self.both_fail + self.judge_only + self.expert_only

    @property
    def agreement(self) -> float | None:
        """Observed agreement p_o; None with no pairs."""
        return (self.both_pass + self.both_fail) / self.total if self.total else None

    @property
    def chance_agreement(self) -> float | None:
        """p_e: the agreement expected if both raters labelled at random with their own pass rates."""
        if not self.total:
            return None
        judge_pass = (self.both_pass + self.judge_only) / self.total
        expert_pass = (self.both_pass + self.expert_only) / self.total
        return judge_pass * expert_pass + (1 - judge_pass) * (1 - expert_pass)

    @property
    def kappa(self) -> float | None:
        """(p_o - p_e) / (1 - p_e); None when undefined (no pairs, or both raters gave one same label)."""
        observed, chance = self.agreement, self.chance_agreement
        if observed is None or chance is None or chance >= 1.0:
            return None
        return (observed - chance) / (1.0 - chance)

    def add(self, judge: bool, expert: bool) -> Agreement:
        return Agreement(
            both_pass=self.both_pass + (judge and expert),
            both_fail=self.both_fail + (not judge and not expert),
            judge_only=self.judge_only + (judge and not expert),
            expert_only=self.expert_only + (expert and not judge),
        )


def agreement(pairs: Iterable[tuple[bool, bool]]) -> Agreement:
    """Tally (judge, expert) verdict pairs."""
    result = Agreement()
    for judge, expert in pairs:
        result = result.add(bool(judge), bool(expert))
    return result


def cohens_kappa(pairs: Iterable[tuple[bool, bool]]) -> float | None:
    return agreement(pairs).kappa
