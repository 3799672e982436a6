"""Labelled episodes for measuring the judge: the JSONL format and the comparison with a verdict.

One JSON object per line:
  {"task_id": "triage-nurse/chest-pain"  (or "task": {inline Task}, optionally "scenario": {Scenario}),
   "trajectory": {EpisodeRecord},
   "labels": {"answer": true, "verification_plan": false, "answer#1": false},
   "passed": false, "expert": "who labelled", "note": "free text"}
`labels` maps rubric item ids (or check ids `<item id>#<index>`) to the labeller's pass/fail; `passed`
is the labeller's optional overall verdict on the task. (`expert` names whoever labelled; the figures say
no more than that person's independence from the tasks allows.)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from occusim.environments import EpisodeRecord, Scenario, Task

from ._agreement import Agreement
from ._errors import JudgeError
from ._jsonl import read_jsonl
from ._verdict import Verdict


class LabeledEpisode(BaseModel):
    """One line of a labels file."""

    model_config = ConfigDict(extra="forbid")

    task: Task | None = None
    task_id: str | None = Field(default=None, description="A task of the catalog (see --source).")
    scenario: Scenario | None = None
    trajectory: EpisodeRecord
    labels: dict[str, bool] = Field(default_factory=dict)
    passed: bool | None = None
    expert: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _one_task(self) -> LabeledEpisode:
        if (self.task is None) == (self.task_id is None):
            raise ValueError("give exactly one of `task` (inline Task JSON) or `task_id`")
        if not self.labels and self.passed is None:
            raise ValueError("give expert `labels` per item id, an overall `passed`, or both")
        return self

    @property
    def wanted_task_id(self) -> str:
        return self.task.id if self.task is not None else self.task_id or ""


LabelLevel = Literal["item", "check", "task"]


@dataclass(frozen=True)
class LabelComparison:
    """The judge's and the expert's verdict on one labelled item, check or whole task."""

    line: int
    episode_id: str
    task_id: str
    key: str
    level: LabelLevel
    deterministic: bool
    judge: bool | None
    expert: bool
    reason: str = ""


def read_labels(path: str | Path) -> list[tuple[int, LabeledEpisode]]:
    """Parse a labels file; errors name the file, the line and the field."""
    out = read_jsonl(path, LabeledEpisode)
    if not out:
        raise JudgeError(f"{path}: no labelled episodes (expected one JSON object per line)")
    return out


def compare_labels(verdict: Verdict, labeled: LabeledEpisode, line: int = 0) -> list[LabelComparison]:
    """Pair each expert label with the judge's verdict on the same item, check or task."""
    items = {item.id: item for item in verdict.items}
    checks = {check.id: (item, check) for item in verdict.items for check in item.checks}
    out: list[LabelComparison] = []
    level: LabelLevel
    for key, expert in labeled.labels.items():
        if key in items:
            item = items[key]
            level, judged = "item", item.passed
            # The checks that decided the item: the ones that did not pass, or all of them when it passed.
            deciding = [c for c in item.checks if c.passed is not True] or item.checks
            reason = "; ".join(c.reason for c in deciding if c.reason)
        elif key in checks:
            item, check = checks[key]
            level, judged, reason = "check", check.passed, check.reason
        else:
            known = ", ".join(items) or "none"
            raise JudgeError(
                f"line {line}: label {key!r} names no item or check of task {verdict.task_id!r} "
                f"(its items: {known}; a check is `<item id>#<index>`)"
            )
        out.append(
            LabelComparison(
                line=line, episode_id=labeled.trajectory.id, task_id=verdict.task_id,
                key=key,
                level=level,
                deterministic=item.deterministic,
                judge=judged,
                expert=expert,
                reason=reason,
            )
        )
    if labeled.passed is not None:
        out.append(
            LabelComparison(
                line=line, episode_id=labeled.trajectory.id, task_id=verdict.task_id,
                key="(task)",
                level="task",
                deterministic=False,
                judge=verdict.passed,
                expert=labeled.passed,
                reason=f"score {verdict.score:.2f}",
            )
        )
    return out


def agreement_by_group(comparisons: list[LabelComparison]) -> dict[str, Agreement]:
    """Agreement per kind of label: llm items (the judge's own work), deterministic items, checks, tasks.

    Labels the judge left undecided (skipped items, an undecided partial verdict) are left out.
    """
    groups: dict[str, Agreement] = {}
    for comparison in comparisons:
        if comparison.judge is None:
            continue
        if comparison.level == "item":
            group = "deterministic items" if comparison.deterministic else "llm items"
        else:
            group = "checks" if comparison.level == "check" else "tasks"
        groups[group] = groups.get(group, Agreement()).add(comparison.judge, comparison.expert)
    order = ["llm items", "deterministic items", "checks", "tasks"]
    return {name: groups[name] for name in order if name in groups}
