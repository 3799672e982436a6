"""The store on both backends: a real SQLite file and the real PostgreSQL server (own schema per test)."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from datetime import timedelta

import asyncpg
import pytest
from runtime_kit import CHEST_PAIN, TriageModel, triage_catalog

from occusim.environments import EpisodeRecord, FaultSettings, InjectedFault, StepRecord, Usage
from occusim.server import (
    EpisodeClosedError,
    EpisodeExistsError,
    EpisodeNotFoundError,
    EpisodeService,
    StepConflictError,
    Store,
)
from occusim.server._store import normalize_url, utcnow

PG_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request, tmp_path):
    if request.param == "sqlite":
        store = Store(tmp_path / "store.db")
    else:
        store = Store(PG_URL, schema=f"occusim_test_{uuid.uuid4().hex[:12]}")
    await store.init()
    yield store
    await store.close()
    if store.schema:
        connection = await asyncpg.connect("postgresql://postgres@127.0.0.1:5432/test")
        try:
            await connection.execute(f'DROP SCHEMA "{store.schema}" CASCADE')
        finally:
            await connection.close()


def twin(store: Store) -> Store:
    """Another connection pool on the same database, as a second process would open."""
    return Store(store.url, schema=store.schema)


def episode(episode_id: str = "ep-1", **fields) -> EpisodeRecord:
    state = {"patients": [{"id": "P1", "priority": 3}], "note": "ünïcode ✓"}
    values = dict(id=episode_id, task_id="t/one", scenario_id="s", world_model="scripted/x", mode="tracked",
                  faults=FaultSettings(mode="E3", seed=4), initial_state=state, state=state, tenant="acme",
                  created_at=utcnow())
    values.update(fields)
    return EpisodeRecord(**values)


def step(index: int, **fields) -> StepRecord:
    values = dict(index=index, tool="get_patient", arguments={"patient_id": "P1"},
                  observation={"id": "P1", "priority": 3}, state_hash="abc", created_at=utcnow(),
                  usage=Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.002, calls=2, cached_calls=1),
                  latency_ms=12.5)
    values.update(fields)
    return StepRecord(**values)


async def test_an_episode_round_trips_with_every_step_field(store):
    record = episode()
    await store.create_episode(record)
    faulty = step(1, observation={"patients": []}, true_observation={"patients": [{"id": "P1"}]},
                  fault=InjectedFault(kind="implicit", label="truncate_list", detail="/patients: 2 -> 1 items"),
                  state_patch=[{"op": "replace", "path": "/patients/0/priority", "value": 1}], is_error=False)
    erroring = step(2, observation={"error": {"type": "simulator_error", "message": "x"}}, is_error=True,
                    error="x", usage=Usage())
    new_state = {"patients": [{"id": "P1", "priority": 1}], "note": "ünïcode ✓"}
    first = step(0)
    await store.append_step("ep-1", first, record.state)
    await store.append_step("ep-1", faulty, new_state)
    await store.append_step("ep-1", erroring, new_state)

    loaded = await store.load_episode("ep-1")

    assert loaded.steps == [first, faulty, erroring]
    assert loaded.steps[0].usage == Usage(prompt_tokens=120, completion_tokens=30, cost_usd=0.002, calls=2,
                                          cached_calls=1)
    assert loaded.steps[2].usage.cost_usd is None and loaded.steps[0].true_observation is None
    assert loaded.state == new_state and loaded.initial_state == record.initial_state
    assert loaded.faults == FaultSettings(mode="E3", seed=4)
    assert loaded.model_dump(exclude={"steps", "state"}) == record.model_dump(exclude={"steps", "state"})
    assert loaded.created_at.tzinfo is not None


async def test_step_indexes_are_guarded(store):
    await store.create_episode(episode())
    await store.append_step("ep-1", step(0), {})

    with pytest.raises(StepConflictError, match="step 0"):
        await store.append_step("ep-1", step(0), {"changed": True})
    with pytest.raises(StepConflictError):
        await store.append_step("ep-1", step(5), {})
    with pytest.raises(EpisodeNotFoundError):
        await store.append_step("nope", step(0), {})
    assert len((await store.load_episode("ep-1")).steps) == 1
    assert (await store.load_episode("ep-1")).state == {}

    await store.close_episode("ep-1", status="submitted", final_answer="done")
    with pytest.raises(EpisodeClosedError, match="submitted"):
        await store.append_step("ep-1", step(1), {})
    with pytest.raises(EpisodeClosedError):
        await store.close_episode("ep-1", status="submitted", final_answer="again")
    with pytest.raises(EpisodeExistsError):
        await store.create_episode(episode())


async def test_racing_writers_from_two_pools_record_each_index_once(store):
    other = twin(store)
    try:
        await store.create_episode(episode())
        for index in range(5):
            results = await asyncio.gather(
                store.append_step("ep-1", step(index, tool="a"), {"writer": "a", "index": index}),
                other.append_step("ep-1", step(index, tool="b"), {"writer": "b", "index": index}),
                return_exceptions=True,
            )
            assert sum(r is None for r in results) == 1
            assert sum(isinstance(r, StepConflictError) for r in results) == 1
        loaded = await other.load_episode("ep-1")
        assert [s.index for s in loaded.steps] == [0, 1, 2, 3, 4]
        assert loaded.state["index"] == 4
        assert loaded.state["writer"] == loaded.steps[-1].tool
    finally:
        await other.close()


async def test_list_and_count_episodes(store):
    base = utcnow()
    for number in range(4):
        await store.create_episode(
            episode(f"ep-{number}", task_id="t/a" if number % 2 else "t/b",
                    tenant="acme" if number < 3 else "other", created_at=base + timedelta(seconds=number))
        )
    await store.close_episode("ep-0", status="submitted", final_answer="x")
    await store.append_step("ep-1", step(0), {})

    everything = await store.list_episodes()
    assert [e.id for e in everything] == ["ep-3", "ep-2", "ep-1", "ep-0"]
    assert everything[2].step_count == 1 and everything[3].status == "submitted"
    assert [e.id for e in await store.list_episodes(status="open", tenant="acme")] == ["ep-2", "ep-1"]
    assert [e.id for e in await store.list_episodes(task_id="t/a")] == ["ep-3", "ep-1"]
    assert [e.id for e in await store.list_episodes(limit=2, offset=1)] == ["ep-2", "ep-1"]
    assert await store.count_episodes() == 4 and await store.count_episodes(status="open") == 3


async def test_judgments_are_stored_and_mark_the_episode_judged(store):
    await store.create_episode(episode())
    with pytest.raises(EpisodeNotFoundError):
        await store.save_judgment("nope", {"score": 1})
    assert await store.load_judgment("ep-1") is None

    await store.save_judgment("ep-1", {"score": 0.25, "passed": False, "judge_model": "m1", "prompt_version": "p1"})
    assert (await store.load_episode("ep-1")).status == "open"  # only a submitted episode becomes judged
    await store.close_episode("ep-1", status="submitted", final_answer="x")
    await store.save_judgment("ep-1", {"score": 1.0, "passed": True, "items": [{"id": "a"}]}, judge_model="m2",
                              prompt_version="p2")

    judgment = await store.load_judgment("ep-1")
    assert judgment.verdict == {"score": 1.0, "passed": True, "items": [{"id": "a"}]}
    assert (judgment.judge_model, judgment.prompt_version, judgment.score, judgment.passed) == ("m2", "p2", 1.0, True)
    assert judgment.created_at.tzinfo is not None
    assert (await store.load_episode("ep-1")).status == "judged"


async def test_expire_idle_only_touches_idle_open_episodes(store):
    await store.create_episode(episode("old", created_at=utcnow() - timedelta(hours=2)))
    await store.create_episode(episode("fresh"))
    await store.create_episode(episode("done", created_at=utcnow() - timedelta(hours=2)))
    await store.close_episode("done", status="submitted", final_answer="x", closed_at=utcnow() - timedelta(hours=2))

    assert await store.expire_idle(utcnow() - timedelta(hours=1)) == ["old"]
    assert (await store.load_episode("old")).status == "expired"
    assert (await store.load_episode("old")).closed_at is not None
    assert (await store.load_episode("fresh")).status == "open"
    assert (await store.load_episode("done")).status == "submitted"


async def test_a_service_on_each_pool_can_drive_the_same_episode(store):
    other = twin(store)
    try:
        model = TriageModel()
        here = EpisodeService(triage_catalog(), store, world_model=model.model)
        there = EpisodeService(triage_catalog(), other, world_model=model.model)
        started = await here.create(CHEST_PAIN)
        await started.step("set_priority", {"patient_id": "P1", "priority": 1})

        continued = await there.open(started.id)
        assert continued.state == started.state
        await continued.step("set_priority", {"patient_id": "P2", "priority": 2})
        await started.step("list_patients", {})  # stale in memory: catches up through the store

        final = await there.open(started.id)
        await final.submit("done")
        loaded = await store.load_episode(started.id)
        assert [s.tool for s in loaded.steps] == ["set_priority", "set_priority", "list_patients"]
        assert loaded.steps[2].observation["patients"][1]["priority"] == 2
        assert loaded.status == "submitted"
    finally:
        await other.close()


async def test_sqlite_uses_wal_and_creates_missing_folders(tmp_path):
    path = tmp_path / "nested" / "deeper" / "occusim.db"
    store = Store(str(path))
    await store.init()
    await store.create_episode(episode())
    await store.close()
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_urls_are_normalized():
    assert normalize_url("runs/x.db") == "sqlite+aiosqlite:///runs/x.db"
    assert normalize_url("sqlite:////abs/x.db") == "sqlite+aiosqlite:////abs/x.db"
    assert normalize_url("postgresql://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert normalize_url("postgresql+asyncpg://u@h/db") == "postgresql+asyncpg://u@h/db"
    assert "secret" not in repr(Store("postgresql://u:secret@h/db"))
    with pytest.raises(ValueError, match="only supported on PostgreSQL"):
        Store("x.db", schema="s")


async def test_an_in_memory_store_works_for_one_process():
    async with Store("sqlite+aiosqlite://") as store:
        await store.create_episode(episode())
        await store.append_step("ep-1", step(0), {"a": 1})
        assert (await store.load_episode("ep-1")).state == {"a": 1}
