"""Every bundled task's reference solution, replayed through the runtime, passes its deterministic items.

The world model is scripted to answer each call with the golden observation and state patch, so this
checks that the catalog's rubrics, golden data and the runtime agree; an agent that submits at once fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from occusim.environments import Task, load_catalog
from occusim.judge import judge
from occusim.llm import scripted_model
from occusim.server import EpisodeService, Store

CATALOG = load_catalog()
TASKS = sorted(CATALOG.tasks.values(), key=lambda t: t.id)


def golden_world_model(task: Task) -> str:
    """A world model that answers the n-th call with the n-th reference step's observation and patch."""
    steps = iter(task.reference_solution)

    def answer(messages: list[dict], request: dict) -> dict:
        step = next(steps)
        return {"observation": step.observation, "state_patch": step.state_patch}

    return scripted_model(answer, name=f"golden-{task.id.replace('/', '-')}")


@pytest.fixture
async def service(tmp_path: Path):
    store = Store(f"sqlite+aiosqlite:///{tmp_path / 'episodes.db'}")
    await store.init()
    yield EpisodeService(CATALOG, store)
    await store.close()


def deterministic(verdict):
    return [item for item in verdict.items if item.kind in ("state", "tool_call")]


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_reference_solution_passes_deterministic_items(service, task: Task):
    assert task.reference_solution, f"{task.id} has no reference solution"
    episode = await service.create(task.id, world_model=golden_world_model(task))
    for index, step in enumerate(task.reference_solution):
        outcome = await episode.step(step.tool, step.arguments)
        assert not outcome.is_error, f"{task.id} step {index} ({step.tool}): {json.dumps(outcome.observation)}"
        assert outcome.observation == step.observation
    record = await episode.submit(task.final_answer or "", run_judge=False)

    verdict = await judge(task, record, scenario=episode.scenario, llm_items="skip")
    items = deterministic(verdict)
    assert items, f"{task.id} has no state or tool_call items"
    failed = {item.id: [c.reason for c in item.checks if not c.passed] for item in items if not item.passed}
    assert not failed, f"{task.id}: deterministic items fail on the reference solution: {failed}"


@pytest.mark.parametrize("task", TASKS, ids=[t.id for t in TASKS])
async def test_submitting_at_once_fails_deterministic_items(service, task: Task):
    episode = await service.create(task.id, world_model=golden_world_model(task))
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
    assert all(sorted(levels) == [1, 2, 3] for levels in by_scenario.values()), by_scenario
