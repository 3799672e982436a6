"""The store's reads for listings: summaries without the states, the latest verdicts and chosen step fields
of many episodes at once."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from occusim.server import Store
from tests.helpers import CLEAN, FAULTED, HOSTILE_ID, POSTGRES_URL, drop_schema, write_viewed_run


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request, tmp_path: Path):
    """The viewed run's episodes in a SQLite file, or in a fresh schema on the PostgreSQL server."""
    schema = None if request.param == "sqlite" else f"occusim_test_{uuid.uuid4().hex[:12]}"
    opened = Store(tmp_path / "store.db" if schema is None else POSTGRES_URL, schema=schema)
    await opened.init()
    await write_viewed_run(tmp_path / "run", opened)
    yield opened
    await opened.close()
    if schema is not None:
        await drop_schema(schema)


async def test_step_fields_of_many_episodes_in_step_order(store: Store):
    fields = await store.step_fields([FAULTED, CLEAN, "ep-none", FAULTED], ["fault", "tool", "no_such_field"])

    assert set(fields) == {CLEAN, FAULTED}
    assert [step["tool"] for step in fields[FAULTED]] == ["get_dispute", "close_dispute"]
    assert fields[FAULTED][0]["fault"] == {"kind": "implicit", "label": "drop_fields", "detail": "dropped: amount"}
    assert fields[FAULTED][1]["fault"] is None
    assert all(set(step) == {"fault", "tool"} for steps in fields.values() for step in steps)


async def test_latest_judgments_and_summaries(store: Store):
    verdict = await store.load_judgment(CLEAN)
    assert verdict is not None
    await store.save_judgment(CLEAN, verdict.verdict | {"score": 0.25, "passed": False})
    judgments = await store.latest_judgments([CLEAN, HOSTILE_ID, "ep-none"])
    summaries = await store.list_episodes()

    assert set(judgments) == {CLEAN, HOSTILE_ID}
    assert judgments[CLEAN].score == 0.25 and judgments[CLEAN].passed is False  # the later verdict wins
    assert [summary.id for summary in summaries] == [HOSTILE_ID, FAULTED, CLEAN]
    assert [summary.faults.mode for summary in summaries] == ["E2", "E2", "E0"]
    assert summaries[1].step_count == 2
