"""A SQLite store commits the writes queued together in one transaction, and each caller still gets the outcome
its write would have had alone, in the order the writes were submitted."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import event

from occusim.environments import EpisodeRecord, StepRecord
from occusim.server import EpisodeClosedError, StepConflictError, Store
from occusim.server._store import utcnow

WRITERS = 40


def episode(episode_id: str) -> EpisodeRecord:
    return EpisodeRecord(id=episode_id, task_id="t/one", scenario_id="s", world_model="scripted/x",
                         initial_state={"n": 0}, state={"n": 0}, created_at=utcnow())


def step(index: int, tool: str = "get") -> StepRecord:
    return StepRecord(index=index, tool=tool, observation={"ok": True}, created_at=utcnow())


@pytest.fixture
async def store(tmp_path):
    async with Store(tmp_path / "store.db") as opened:
        yield opened


def counting_commits(store: Store) -> list[int]:
    commits: list[int] = []
    event.listen(store._database.engine, "commit", lambda _conn: commits.append(1))  # type: ignore[union-attr]
    return commits


async def test_writes_queued_together_share_transactions(store):
    await asyncio.gather(*(store.create_episode(episode(f"ep-{n}")) for n in range(WRITERS)))
    commits = counting_commits(store)

    await asyncio.gather(*(store.append_step(f"ep-{n}", step(0), {"n": n}) for n in range(WRITERS)))

    assert 1 <= len(commits) < WRITERS
    for n in range(WRITERS):
        loaded = await store.load_episode(f"ep-{n}")
        assert [s.index for s in loaded.steps] == [0] and loaded.state == {"n": n}


async def test_a_failing_write_fails_alone_and_leaves_no_trace(store):
    await asyncio.gather(*(store.create_episode(episode(f"ep-{n}")) for n in range(WRITERS)))
    await store.close_episode("ep-3", status="submitted", final_answer="done")
    commits = counting_commits(store)

    outcomes = await asyncio.gather(
        *(store.append_step(f"ep-{n}", step(0), {"n": n}) for n in range(WRITERS)),
        store.append_step("ep-5", step(0, tool="second"), {"n": "second"}),  # the same index again: refused
        return_exceptions=True,
    )

    assert isinstance(outcomes[3], EpisodeClosedError)
    assert isinstance(outcomes[WRITERS], StepConflictError)
    assert all(outcome is None for n, outcome in enumerate(outcomes[:WRITERS]) if n != 3)
    closed = await store.load_episode("ep-3")
    assert closed.steps == [] and closed.state == {"n": 0}
    fifth = await store.load_episode("ep-5")
    assert [s.tool for s in fifth.steps] == ["get"] and fifth.state == {"n": 5}
    assert len(commits) <= WRITERS  # the batch that held the failures was re-run write by write


async def test_writes_to_one_episode_keep_their_order(store):
    await store.create_episode(episode("ep-1"))

    outcomes = await asyncio.gather(*(store.append_step("ep-1", step(index, tool=f"call-{index}"), {"n": index})
                                      for index in range(WRITERS)), return_exceptions=True)

    assert outcomes == [None] * WRITERS
    loaded = await store.load_episode("ep-1")
    assert [s.tool for s in loaded.steps] == [f"call-{index}" for index in range(WRITERS)]


async def test_a_cancelled_caller_neither_loses_its_write_nor_stops_the_writer(store):
    await store.create_episode(episode("ep-1"))
    waiting = asyncio.ensure_future(store.append_step("ep-1", step(0), {"n": 1}))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting

    await store.append_step("ep-1", step(1), {"n": 2})
    loaded = await store.load_episode("ep-1")
    assert [s.index for s in loaded.steps] == [0, 1] and loaded.state == {"n": 2}


async def test_a_closed_store_can_write_again(tmp_path):
    store = Store(tmp_path / "store.db")
    await store.init()
    await store.create_episode(episode("ep-1"))
    await store.close()

    await store.append_step("ep-1", step(0), {"n": 1})
    loaded = await store.load_episode("ep-1")
    await store.close()
    assert [s.index for s in loaded.steps] == [0]
