"""The discrimination report format (one pydantic definition) and its markdown rendering."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

Gate = Literal[
    "reference-passes", "has-critical-item", "zero-without-work", "no-baseline-passes", "write-guarded",
    "value-guarded", "order-robust",
]
GATES: tuple[Gate, ...] = (
    "reference-passes", "has-critical-item", "zero-without-work", "no-baseline-passes", "write-guarded",
    "value-guarded", "order-robust",
)


class BaselineScore(BaseModel):
    """One derived baseline as the judge scored it."""

    name: str = Field(description="e.g. do-nothing, minus-step-4, perturbed-step-4-ordered_cfs, reordered")
    kind: str
    step: int | None = Field(default=None, description="The reference step it changes, if one.")
    note: str = ""
    score: float
    passed: bool | None
    failed_items: list[str] = Field(default_factory=list)
    blocking_failures: list[str] = Field(default_factory=list, description="Failed critical and guard items.")


class GateFailure(BaseModel):
    gate: Gate
    baseline: str | None = None
    message: str


class TaskDiscrimination(BaseModel):
    """The gates on one task: its baselines' scores and every gate it fails."""

    task_id: str
    scenario_id: str
    gateable: bool
    reason: str | None = Field(default=None, description="Why the task cannot be gated (no reference).")
    baselines: list[BaselineScore] = Field(default_factory=list)
    failures: list[GateFailure] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.gateable and not self.failures


class DiscriminationReport(BaseModel):
    tasks: list[TaskDiscrimination] = Field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every gateable task passes every gate (tasks without a reference are reported, not failed)."""
        return all(task.ok for task in self.tasks if task.gateable)

    def gate_counts(self) -> dict[str, int]:
        """How many tasks fail each gate."""
        counts = Counter(gate for task in self.tasks for gate in {failure.gate for failure in task.failures})
        return {gate: counts.get(gate, 0) for gate in GATES}

    def summary(self) -> str:
        gated = [task for task in self.tasks if task.gateable]
        failing = [task for task in gated if task.failures]
        idle = [b.score for task in gated for b in task.baselines if b.kind == "do-nothing"]
        counts = ", ".join(f"{gate} {n}" for gate, n in self.gate_counts().items() if n)
        return (
            f"{'ok' if self.ok else 'failed'}: {len(gated)} tasks gated, {len(failing)} failing a gate"
            f"{f' ({counts})' if counts else ''}, {len(self.tasks) - len(gated)} not gateable; "
            f"do-nothing scores up to {max(idle, default=0.0):g}"
        )


def render_markdown(report: DiscriminationReport) -> str:
    """A table per task (baseline -> score, pass) and its gate failures, then the summary."""
    lines = ["# Discrimination gates", ""]
    for task in report.tasks:
        lines.append(f"## {task.task_id}")
        lines.append("")
        if not task.gateable:
            lines += [f"not gateable: {task.reason}", ""]
            continue
        lines += ["| baseline | score | passed | failed items |", "|---|---|---|---|"]
        for baseline in task.baselines:
            name = f"{baseline.name} ({baseline.note})" if baseline.note else baseline.name
            failed = ", ".join(
                f"**{item}**" if item in baseline.blocking_failures else item for item in baseline.failed_items
            )
            lines.append(f"| {_cell(name)} | {baseline.score:.2f} | {_outcome(baseline.passed)} | {_cell(failed)} |")
        lines.append("")
        lines += [f"- FAILS {failure.gate}: {_cell(failure.message)}" for failure in task.failures] or ["- all gates pass"]
        lines.append("")
    lines.append(report.summary())
    return "\n".join(lines) + "\n"


def _outcome(passed: bool | None) -> str:
    return {True: "pass", False: "fail", None: "undecided"}[passed]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
