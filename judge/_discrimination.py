"""Discrimination gates: score a task's derived baselines with the judge's checks and say what they prove.

The llm items (and the verification plan) are decided by a fixed scripted verdict: passed for the reference
and its reorderings, failed for every other baseline. Everything else is the judge's own code: the
deterministic checks and the score arithmetic of `_scoring`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from occusim.environments import Catalog, LlmItem, Scenario, Task

from ._baselines import Baseline, derive_baselines
from ._discrimination_report import BaselineScore, DiscriminationReport, Gate, GateFailure, TaskDiscrimination
from ._judge import verification_plan_item
from ._scoring import check_item, score_items
from ._verdict import CheckVerdict, ItemVerdict

NO_REFERENCE = "no reference solution to derive baselines from"
_GATE_OF_KIND: dict[str, Gate] = {"minus-step": "write-guarded", "perturbed": "value-guarded"}


def scripted_llm_verdict(item: LlmItem, passed: bool) -> ItemVerdict:
    """An llm item decided without a model: every check passed (or failed) by the scripted judge."""
    reason = "scripted judge: " + ("the reference's answer" if passed else "a baseline's answer")
    checks = [
        CheckVerdict(index=i, id=f"{item.id}#{i}", description=text, passed=passed, reason=reason)
        for i, text in enumerate(item.checks)
    ]
    return ItemVerdict(id=item.id, kind="llm", weight=item.weight, description=item.description, passed=passed,
                       checks=checks, deterministic=False, critical=item.critical)


def score_baseline(task: Task, baseline: Baseline) -> BaselineScore:
    """The baseline's score and outcome under the task's rubric (and verification plan)."""
    plan = verification_plan_item(task)
    items: list[ItemVerdict] = []
    for item in [*task.rubric.items, *([plan] if plan else [])]:
        if isinstance(item, LlmItem):
            items.append(scripted_llm_verdict(item, baseline.answer_correct))
        else:
            items.append(check_item(item, state=baseline.state, steps=baseline.steps))
    score, passed = score_items(items, task.rubric.pass_threshold)
    return BaselineScore(
        name=baseline.name,
        kind=baseline.kind,
        step=baseline.step,
        note=baseline.note,
        score=round(score, 4),
        passed=passed,
        failed_items=[item.id for item in items if item.passed is False],
        blocking_failures=[item.id for item in items if (item.critical or item.guard) and item.passed is False],
    )


def discriminate_task(scenario: Scenario, task: Task, initial: dict[str, Any]) -> TaskDiscrimination:
    """Score every baseline of one task and check the gates on them."""
    result = TaskDiscrimination(task_id=task.id, scenario_id=scenario.id, gateable=bool(task.reference_solution))
    if not task.reference_solution:
        result.reason = NO_REFERENCE
        return result
    scores = [score_baseline(task, baseline) for baseline in derive_baselines(scenario, task, initial)]
    result.baselines = scores
    result.failures = list(_gate_failures(task, scores, _reference_deterministic_passes(task, scores)))
    return result


def _reference_deterministic_passes(task: Task, scores: list[BaselineScore]) -> set[str]:
    reference = scores[0]
    return {item.id for item in task.rubric.items if item.kind != "llm" and item.id not in reference.failed_items}


def _gate_failures(task: Task, scores: list[BaselineScore], guarded: set[str]) -> Iterable[GateFailure]:
    reference, *baselines = scores
    if reference.passed is not True:
        yield GateFailure(gate="reference-passes", baseline="reference",
                          message=f"the reference itself does not pass (failed: {', '.join(reference.failed_items)})")
    if not any(item.critical for item in task.rubric.items):
        yield GateFailure(gate="has-critical-item", baseline=None,
                          message="no rubric item is critical; mark the item(s) without which the work is wrong")
    optional = {index: step.optional for index, step in enumerate(task.reference_solution) if step.optional}
    for score in baselines:
        if score.kind == "reordered":
            if score.passed is not True or score.failed_items:
                yield GateFailure(gate="order-robust", baseline=score.name,
                                  message=f"independent writes in another order fail: {', '.join(score.failed_items)}")
            continue
        if score.kind in ("do-nothing", "read-only") and score.score > 0:
            yield GateFailure(gate="zero-without-work", baseline=score.name,
                              message=f"scores {score.score:g} without changing anything")
        flipped = guarded & set(score.failed_items)
        if score.kind == "minus-step" and score.step not in optional and not flipped:
            # Failing on the scripted answer alone proves nothing about the write: an item must check it.
            yield GateFailure(gate="write-guarded", baseline=score.name,
                              message=f"no state or tool_call item fails {_without(score)}; check what this write "
                              "changes, or declare the step optional with a reason")
            continue
        if score.passed is not True:
            continue
        if score.kind == "minus-step" and score.step in optional:
            continue
        if score.kind == "perturbed" and not flipped:
            continue  # no item reads the perturbed value: reported in the table, not a gate
        gate = _GATE_OF_KIND.get(score.kind, "no-baseline-passes")
        yield GateFailure(gate=gate, baseline=score.name, message=f"passes with score {score.score:g} ({score.note})"
                          if score.note else f"passes with score {score.score:g}")


def _without(score: BaselineScore) -> str:
    return f"when step {score.step} is left out ({score.note})"


def discriminate_catalog(catalog: Catalog, tasks: Iterable[Task] | None = None) -> DiscriminationReport:
    """The gates over every task of the catalog (or the given ones), in catalog order."""
    chosen = list(tasks) if tasks is not None else list(catalog.tasks.values())
    return DiscriminationReport(
        tasks=[discriminate_task(catalog.scenario_of(task), task, catalog.initial_state(task)) for task in chosen]
    )
