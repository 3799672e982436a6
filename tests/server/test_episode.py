"""Episodes through EpisodeService: typed errors, recorded steps, submit and judging, reopening, expiry."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from occusim.environments import UnknownTaskError
from occusim.server import (
    EpisodeClosedError,
    EpisodeError,
    EpisodeExistsError,
    EpisodeNotFoundError,
    EpisodeService,
    StepLimitError,
    Store,
    UnknownToolError,
)
from tests.helpers import CHEST_PAIN, TriageModel, start_episode, triage_catalog


class FakeVerdict(BaseModel):
    score: float
    passed: bool
    judge_model: str | None = None
    prompt_version: str = "v-test"


async def test_unknown_tool_raises_with_the_valid_tools_and_records_nothing(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)

    with pytest.raises(UnknownToolError) as raised:
        await episode.step("discharge_patient", {"patient_id": "P1"})

    assert "discharge_patient" in str(raised.value)
    assert "get_patient, list_patients, set_priority" in str(raised.value)
    assert episode.record.steps == [] and model.calls == 0
    assert (await sqlite_store.load_episode(episode.id)).steps == []


async def test_invalid_arguments_are_recorded_with_every_violation_and_no_model_call(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)

    outcome = await episode.step("set_priority", {"priority": 9, "urgent": True})

    assert outcome.is_error and model.calls == 0
    error = outcome.observation["error"]
    assert error["type"] == "invalid_arguments"
    paths = {(v["path"], v["message"]) for v in error["violations"]}
    assert ("priority", "9 is greater than the maximum of 5") in paths
    assert any(path == "" and "'patient_id' is a required property" in msg for path, msg in paths)
    assert any(path == "" and "'urgent' was unexpected" in msg for path, msg in paths)
    assert "priority: 9 is greater than the maximum of 5" in error["message"]
    assert outcome.record.error == error["message"]
    assert episode.state == episode.record.initial_state
    stored = await sqlite_store.load_episode(episode.id)
    assert stored.steps[0].arguments == {"priority": 9, "urgent": True}

    not_an_object = await episode.step("get_patient", ["P1"])  # type: ignore[arg-type]
    assert not_an_object.observation["error"]["violations"][0]["message"].startswith("arguments must be")
    assert model.calls == 0


async def test_step_limit_asks_the_agent_to_submit(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model, task_id="triage-desk/short")
    await episode.step("list_patients", {})
    await episode.step("list_patients", {})
    assert episode.steps_left == 0

    with pytest.raises(StepLimitError, match="limit of 2 tool calls; call submit_result"):
        await episode.step("list_patients", {})
    assert len(episode.record.steps) == 2 and model.calls == 2

    record = await episode.submit("listed")
    assert record.status == "submitted"


async def test_submit_closes_the_episode(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)
    await episode.step("set_priority", {"patient_id": "P1", "priority": 1})

    record = await episode.submit("P1 is now priority 1")

    assert episode.closed and record.status == "submitted"
    assert record.final_answer == "P1 is now priority 1" and record.closed_at is not None
    with pytest.raises(EpisodeClosedError, match="closed \\(submitted\\)"):
        await episode.step("list_patients", {})
    with pytest.raises(EpisodeClosedError):
        await episode.submit("again")
    stored = await sqlite_store.load_episode(episode.id)
    assert stored.status == "submitted" and stored.final_answer == "P1 is now priority 1"
    assert stored.state["patients"][0]["priority"] == 1
    assert await sqlite_store.load_judgment(episode.id) is None


async def test_the_judge_hook_scores_the_final_record_and_its_verdict_is_stored(sqlite_store):
    seen = []

    async def judge(task, scenario, record):
        seen.append((task.id, scenario.id, record.final_answer, record.state["patients"][0]["priority"]))
        return FakeVerdict(score=1.0, passed=True, judge_model="scripted/judge")

    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model, judge=judge)
    episode = await service.create(CHEST_PAIN)
    await episode.step("set_priority", {"patient_id": "P1", "priority": 1})

    record = await episode.submit("done")

    assert seen == [(CHEST_PAIN, "triage-desk", "done", 1)]
    assert record.status == "judged" and episode.verdict.score == 1.0
    judgment = await sqlite_store.load_judgment(episode.id)
    assert judgment.verdict == {"score": 1.0, "passed": True, "judge_model": "scripted/judge",
                                "prompt_version": "v-test"}
    assert (judgment.judge_model, judgment.prompt_version, judgment.passed) == ("scripted/judge", "v-test", True)
    assert (await sqlite_store.load_episode(episode.id)).status == "judged"


async def test_a_failing_judge_keeps_the_submission(sqlite_store):
    async def judge(task, scenario, record):
        raise RuntimeError("judge model unreachable")

    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model, judge=judge)
    episode = await service.create(CHEST_PAIN)

    record = await episode.submit("done")

    assert record.status == "submitted"
    assert episode.judge_error == "RuntimeError: judge model unreachable"
    assert (await sqlite_store.load_episode(episode.id)).status == "submitted"


async def test_submit_without_judging_then_judge_later(sqlite_store):
    async def judge(task, scenario, record):
        return FakeVerdict(score=0.5, passed=False)

    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model, judge=judge)
    episode = await service.create(CHEST_PAIN)
    with pytest.raises(EpisodeError, match="still open"):
        await episode.judge()

    assert (await episode.submit("x", run_judge=False)).status == "submitted"
    verdict = await episode.judge()
    assert verdict.score == 0.5 and episode.status == "judged"


async def test_an_episode_reopens_after_a_restart_and_continues(tmp_path):
    path = tmp_path / "restart.db"
    model = TriageModel()
    first_store = Store(path)
    await first_store.init()
    first = EpisodeService(triage_catalog(), first_store, world_model=model.model)
    episode = await first.create(CHEST_PAIN, tenant="clinic-a")
    await episode.step("list_patients", {})
    await episode.step("set_priority", {"patient_id": "P1", "priority": 1})
    before = episode.record.model_copy(deep=True)
    await first_store.close()

    second_store = Store(f"sqlite:///{path}")
    await second_store.init()
    second = EpisodeService(triage_catalog(), second_store, world_model=model.model)
    reopened = await second.open(episode.id)

    assert reopened is not episode
    assert reopened.record == before
    assert reopened.record.tenant == "clinic-a"
    outcome = await reopened.step("get_patient", {"patient_id": "P1"})
    assert outcome.record.index == 2 and outcome.observation["priority"] == 1
    assert await second.open(episode.id) is reopened
    await second_store.close()


async def test_open_and_create_errors(sqlite_store):
    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)

    with pytest.raises(EpisodeNotFoundError, match="no episode 'missing'"):
        await service.open("missing")
    with pytest.raises(UnknownTaskError, match="triage-desk/chest-pain"):
        await service.create("triage-desk/chest-pains")
    await service.create(CHEST_PAIN, episode_id="ep-1")
    with pytest.raises(EpisodeExistsError, match="'ep-1' already exists"):
        await service.create(CHEST_PAIN, episode_id="ep-1")
    with pytest.raises(EpisodeError, match="is not valid"):
        await service.create(CHEST_PAIN, episode_id="../etc")

    other_catalog = EpisodeService(triage_catalog(id="other-desk", tasks=[]), sqlite_store, world_model=model.model)
    with pytest.raises(EpisodeError, match="not in the loaded catalog"):
        await other_catalog.open("ep-1")


async def test_a_closed_episode_opens_but_refuses_calls(sqlite_store):
    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)
    episode = await service.create(CHEST_PAIN)
    await episode.submit("done")
    assert episode.id not in service.open_episodes

    reopened = await service.open(episode.id)
    assert reopened.closed and reopened.record.final_answer == "done"
    with pytest.raises(EpisodeClosedError):
        await reopened.step("list_patients", {})


async def test_expire_idle_marks_open_episodes_expired(sqlite_store):
    model = TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)
    idle = await service.create(CHEST_PAIN)
    done = await service.create(CHEST_PAIN)
    await done.submit("done")

    assert await service.expire_idle(3600) == []
    await asyncio.sleep(0.01)
    assert await service.expire_idle(0.005) == [idle.id]

    assert idle.status == "expired" and idle.closed
    with pytest.raises(EpisodeClosedError, match="expired"):
        await idle.step("list_patients", {})
    assert (await sqlite_store.load_episode(idle.id)).status == "expired"
    assert (await sqlite_store.load_episode(done.id)).status == "submitted"


async def test_concurrent_calls_on_one_episode_run_in_order(sqlite_store):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)

    outcomes = await asyncio.gather(
        *(episode.step("set_priority", {"patient_id": "P2", "priority": p}) for p in (1, 2, 3, 4, 5))
    )

    assert sorted(o.record.index for o in outcomes) == [0, 1, 2, 3, 4]
    stored = await sqlite_store.load_episode(episode.id)
    assert [s.index for s in stored.steps] == [0, 1, 2, 3, 4]
    assert stored.state == episode.state


async def test_each_step_is_durable_before_it_returns(sqlite_store, tmp_path):
    model = TriageModel()
    episode = await start_episode(sqlite_store, model)
    reader = Store(tmp_path / "episodes.db")
    try:
        for expected in range(1, 4):
            await episode.step("set_priority", {"patient_id": "P3", "priority": expected})
            seen = await reader.load_episode(episode.id)
            assert len(seen.steps) == expected
            assert seen.state["patients"][2]["priority"] == expected
    finally:
        await reader.close()


async def test_two_services_sharing_a_store_never_lose_or_duplicate_a_step(sqlite_store):
    model = TriageModel()
    first = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)
    second = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)
    mine = await first.create(CHEST_PAIN)
    theirs = await second.open(mine.id)

    await mine.step("set_priority", {"patient_id": "P1", "priority": 1})
    # `theirs` still holds the state from before that call: the store refuses its index and it catches up.
    outcome = await theirs.step("set_priority", {"patient_id": "P2", "priority": 2})

    assert outcome.record.index == 1
    assert theirs.state["patients"][0]["priority"] == 1 and theirs.state["patients"][1]["priority"] == 2
    stored = await sqlite_store.load_episode(mine.id)
    assert [s.index for s in stored.steps] == [0, 1]
    assert stored.state == theirs.state


async def test_the_world_model_can_be_chosen_per_episode(sqlite_store):
    default, special = TriageModel(), TriageModel()
    service = EpisodeService(triage_catalog(), sqlite_store, world_model=default.model)
    episode = await service.create(CHEST_PAIN, world_model=special.model)
    await episode.step("list_patients", {})
    assert (default.calls, special.calls) == (0, 1)
    assert episode.record.world_model == special.model
    service.forget(episode.id)
    reopened = await service.open(episode.id)
    await reopened.step("list_patients", {})
    assert special.calls == 2


async def test_an_episode_closed_by_another_service_refuses_further_calls(sqlite_store):
    model = TriageModel()
    here = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)
    there = EpisodeService(triage_catalog(), sqlite_store, world_model=model.model)
    episode = await here.create(CHEST_PAIN)
    await (await there.open(episode.id)).submit("done elsewhere")

    with pytest.raises(EpisodeClosedError, match="submitted"):
        await episode.step("list_patients", {})
    assert episode.closed and episode.record.final_answer == "done elsewhere"
    with pytest.raises(EpisodeClosedError):
        await episode.submit("again")
