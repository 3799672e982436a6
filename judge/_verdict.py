"""The verdict format: every item, check and vote with its reason, as stored beside each episode."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from occusim.environments import Usage

from ._settings import JudgeSettings

ItemKind = Literal["llm", "state", "tool_call"]


class Vote(BaseModel):
    """One judge vote on one check; `passed` is None when no answer to it was usable (an abstention)."""

    vote: int = Field(description="Which of the k votes (0-based).")
    passed: bool | None = Field(description="None: abstained, counted as a fail vote by the tally.")
    reason: str = ""
    evidence_steps: list[int] = Field(default_factory=list)
    position: int | None = Field(default=None, description="Where the check appeared in this vote's order.")
    attempts: int = Field(default=1, description="Requests made for this vote until it answered this check.")


class CheckVerdict(BaseModel):
    """The outcome of one check of a rubric item."""

    index: int = Field(description="The check's position in its item (0-based).")
    id: str = Field(description="`<item id>#<index>`, the id the LLM judge answers under.")
    description: str
    passed: bool | None = Field(description="None when the check was not judged.")
    reason: str = ""
    evidence_steps: list[int] = Field(
        default_factory=list, description="Step indexes supporting the outcome."
    )
    votes: list[Vote] = Field(default_factory=list)
    tie: bool = Field(
        default=False, description="As many pass votes as fail votes, abstentions counted as fails (not passed)."
    )
    abstentions: int = Field(default=0, description="Votes with no usable answer, counted as fail votes.")
    unjudged: bool = Field(
        default=False, description="No vote was usable, so the judge could not decide (passed is None)."
    )


class ItemVerdict(BaseModel):
    """A rubric item: it scores its weight only when every one of its checks passed."""

    id: str
    kind: ItemKind
    weight: float
    description: str = ""
    passed: bool | None = Field(description="None when the item was not judged (its kind was skipped).")
    checks: list[CheckVerdict] = Field(default_factory=list)
    deterministic: bool
    critical: bool = Field(default=False, description="A failure fails the task whatever the score.")
    guard: bool = Field(
        default=False, description="Must stay true from the start: earns no score, a failure fails the task."
    )


class Verdict(BaseModel):
    """A task's score on one recorded episode, with everything needed to audit it later."""

    task_id: str
    episode_id: str | None = None
    score: float = Field(description="Weighted share of passed items, over the judged items only.")
    passed: bool | None = Field(
        description="score >= pass_threshold; None only when unjudged items could still change the outcome."
    )
    pass_threshold: float
    partial: bool = Field(default=False, description="Some items were not judged (llm items skipped).")
    items: list[ItemVerdict]
    judge_model: str | None = Field(default=None, description="None when no item needed a model.")
    prompt_version: str
    votes: int = Field(default=0, description="Votes cast per llm check (0 when no llm item was judged).")
    seed: int = 0
    abstentions: int = Field(default=0, description="Votes with no usable answer, over all llm checks.")
    ties: list[str] = Field(default_factory=list, description="Ids of the checks whose votes tied.")
    unjudged_checks: list[str] = Field(
        default_factory=list,
        description="Ids of the checks that could not be decided (no usable vote, or a state check without a "
        "tracked state); the episode is unjudged when they could still change whether it passes.",
    )
    reasks: int = Field(default=0, description="Extra requests made because an answer was unusable.")
    settings: JudgeSettings | None = Field(
        default=None, description="How the votes were sampled and counted; None in verdicts stored before it was."
    )
    usage: Usage = Field(default_factory=Usage)
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def blocking_failures(self) -> list[str]:
        """Ids of the failed critical and guard items: each one alone fails the task."""
        return [item.id for item in self.items if (item.critical or item.guard) and item.passed is False]

    @property
    def unjudged(self) -> bool:
        """The judge could not decide a check that could still change the outcome: an infrastructure outcome,
        never the agent's failure. An episode that fails on its decided items alone stays a failure, so that
        leaving it out cannot raise the completion rate."""
        return bool(self.unjudged_checks) and self.passed is None

    def item(self, item_id: str) -> ItemVerdict:
        for item in self.items:
            if item.id == item_id:
                return item
        raise KeyError(f"no item {item_id!r} in the verdict of task {self.task_id!r}")
