"""Every bundled task: leaving out the write its critical item checks fails the task, with that item named.

The careless episode is the reference with one write left out (its patch not applied), recorded as an
episode and scored by `judge` itself with the llm items skipped, so the failure comes from the
deterministic critical item alone, never from the answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import occusim.environments
from occusim.environments import EpisodeRecord, LlmItem, StepRecord, load_catalog, load_yaml
from occusim.judge import derive_baselines, judge, score_baseline

CATALOG = load_catalog([])
TASKS = sorted(CATALOG.tasks)


def careless_episode(task_id: str) -> tuple[EpisodeRecord, set[str], str]:
    """The reference minus the first write whose absence fails a deterministic critical item."""
    task = CATALOG.task(task_id)
    critical = {item.id for item in task.rubric.items if item.critical and not isinstance(item, LlmItem)}
    for baseline in derive_baselines(CATALOG.scenario_of(task), task, CATALOG.initial_state(task)):
        if baseline.kind != "minus-step":
            continue
        failed = critical & set(score_baseline(task, baseline).failed_items)
        if failed:
            steps = [
                StepRecord(index=i, tool=s.tool, arguments=s.arguments, observation=s.observation,
                           state_patch=s.state_patch)
                for i, s in enumerate(baseline.steps)
            ]
            record = EpisodeRecord(id=f"careless-{baseline.name}", task_id=task.id, scenario_id=task.scenario or "",
                                   initial_state=CATALOG.initial_state(task), state=baseline.state, steps=steps,
                                   final_answer=task.final_answer, status="submitted")
            return record, failed, baseline.note
    raise AssertionError(f"{task_id}: no single left-out write fails a deterministic critical item ({critical})")


@pytest.mark.parametrize("task_id", TASKS)
async def test_the_careless_episode_fails_on_its_critical_item(task_id: str) -> None:
    task = CATALOG.task(task_id)
    record, failed, without = careless_episode(task_id)
    verdict = await judge(task, record, scenario=CATALOG.scenario_of(task), llm_items="skip")
    assert verdict.passed is False, (without, verdict.score)
    assert failed <= set(verdict.blocking_failures), (without, verdict.blocking_failures)


def test_every_task_is_covered() -> None:
    # Counted from the files themselves, not through the loader: a task the loader dropped would go untested.
    folder = Path(occusim.environments.__file__).parent / "catalog"
    in_files = sum(len(load_yaml(path.read_text(encoding="utf-8"))["tasks"]) for path in folder.rglob("*.yaml"))
    assert len(TASKS) == in_files >= 120
