"""Every bundled task's reference solution, replayed through the runtime, passes its deterministic items.

The world model is scripted to answer each call with the golden observation and state patch, so this
checks that the catalog's rubrics, golden data and the runtime agree; an agent that submits at once fails.
"""

from __future__ import annotations

import pytest

from occusim.environments import Task, load_catalog
from occusim.judge import judge
from occusim.server import EpisodeService, Store
from tests.helpers import golden_world, play

CATALOG = load_catalog()
TASKS = sorted(CATALOG.tasks.values(), key=lambda t: t.id)


def reference_world(task: Task) -> str:
    return golden_world(task, name=f"golden-{task.id.replace('/', '-')}")


@pytest.fixture
def service(sqlite_store: Store) -> EpisodeService:
    return EpisodeService(CATALOG, sqlite_store)


def deterministic(verdict):
    return [item for item in verdict.items if item.kind in ("state", "tool_call")]


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_reference_solution_passes_deterministic_items(service, task: Task):
    assert task.reference_solution, f"{task.id} has no reference solution"
    episode = await service.create(task.id, world_model=reference_world(task))
    outcomes = await play(episode, task.reference_solution)
    assert [o.observation for o in outcomes] == [step.observation for step in task.reference_solution]
    record = await episode.submit(task.final_answer or "", run_judge=False)

    verdict = await judge(task, record, scenario=episode.scenario, llm_items="skip")
    items = deterministic(verdict)
    assert items, f"{task.id} has no state or tool_call items"
    failed = {item.id: [c.reason for c in item.checks if not c.passed] for item in items if not item.passed}
    assert not failed, f"{task.id}: deterministic items fail on the reference solution: {failed}"


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_submitting_at_once_fails_deterministic_items(service, task: Task):
    episode = await service.create(task.id, world_model=reference_world(task))
    record = await episode.submit("Done.", run_judge=False)

    verdict = await judge(task, record, scenario=episode.scenario, llm_items="skip")
    items = deterministic(verdict)
    assert any(not item.passed for item in items if item.kind == "state"), f"{task.id}: no state item fails"
    assert all(not item.passed for item in items if item.kind == "tool_call")
    assert verdict.passed is False or verdict.score < verdict.pass_threshold


def test_catalog_covers_every_category_with_three_difficulties():
    by_scenario: dict[str, list[int]] = {}
    for task in TASKS:
        by_scenario.setdefault(task.scenario or "", []).append(task.difficulty)
    # Three tasks or more, at least one at each difficulty.
    assert all(len(levels) >= 3 and set(levels) == {1, 2, 3} for levels in by_scenario.values()), by_scenario
