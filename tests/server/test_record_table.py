"""Record tables: columns follow a record's fields, and records go into a real SQLite table and come back equal."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any, Literal

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from occusim.environments import InjectedFault, StepRecord, Usage
from occusim.server._record_table import RecordTable, UTCDateTime


class Flag(BaseModel):
    code: str
    raised_at: datetime


class AuditedStep(StepRecord):
    """A step as a later release might record it: the new fields are all it takes to store them."""

    audit: Literal["clean", "flagged"] = "clean"
    flags: list[Flag] = Field(default_factory=list)
    reviewed_at: datetime | None = None
    reviewer: str | None = None


def audited_steps(metadata: sa.MetaData) -> RecordTable[AuditedStep]:
    return RecordTable(
        "steps", metadata, AuditedStep,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        columns={"index": sa.Column("step_index", sa.Integer, nullable=False)},
        flatten={"usage"},
    )


@pytest.fixture
def database():
    engine = sa.create_engine("sqlite://")
    metadata = sa.MetaData()
    table = audited_steps(metadata)
    metadata.create_all(engine)
    with engine.begin() as connection:
        yield table, connection
    engine.dispose()


def round_trip(table: RecordTable[AuditedStep], connection: sa.Connection, record: AuditedStep) -> AuditedStep:
    connection.execute(sa.delete(table.table))
    connection.execute(sa.insert(table.table).values(table.to_row(record)))
    return table.from_row(connection.execute(sa.select(table.table)).mappings().one())


def test_new_fields_get_columns_by_rule():
    columns = audited_steps(sa.MetaData()).table.c
    assert isinstance(columns.audit.type, sa.String) and columns.audit.type.length == 16
    assert not columns.audit.nullable
    assert isinstance(columns.flags.type, sa.JSON) and not columns.flags.nullable
    assert isinstance(columns.reviewed_at.type, UTCDateTime) and columns.reviewed_at.nullable
    assert isinstance(columns.reviewer.type, sa.Text) and columns.reviewer.nullable
    assert isinstance(columns.observation.type, sa.JSON) and columns.observation.nullable
    assert {"prompt_tokens", "cost_usd", "cached_calls"} <= set(columns.keys()) and "usage" not in columns
    assert "index" not in columns and not columns.step_index.nullable


def test_a_record_with_new_fields_round_trips(database):
    table, connection = database
    raised = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=2)))
    record = AuditedStep(
        index=3, tool="t", arguments={"a": [1, 2]}, observation={"x": None}, is_error=True,
        fault=InjectedFault(kind="explicit", label="timeout"), usage=Usage(prompt_tokens=5, cost_usd=0.5),
        audit="flagged", flags=[Flag(code="leak", raised_at=raised)], reviewed_at=raised, reviewer="ann",
    )

    loaded = round_trip(table, connection, record)

    assert loaded == record
    assert loaded.reviewed_at is not None and loaded.reviewed_at.tzinfo is not None  # stored as UTC


def test_mistakes_in_a_table_declaration_are_reported():
    with pytest.raises(ValueError, match=r"\['tools'\], which are not fields of StepRecord"):
        RecordTable("x", sa.MetaData(), StepRecord, columns={"tools": sa.Column("tool", sa.Text)})
    with pytest.raises(ValueError, match="not a model, so it cannot be flattened"):
        RecordTable("x", sa.MetaData(), StepRecord, flatten={"tool"})
    with pytest.raises(ValueError, match="not fields of StepRecord"):
        RecordTable("x", sa.MetaData(), StepRecord, exclude={"nope"})

    class Coded(BaseModel):
        code: Literal["short", "much-longer-than-sixteen"]

    with pytest.raises(ValueError, match="longer than 16 characters"):
        RecordTable("x", sa.MetaData(), Coded)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    observation=json_values,
    true_observation=json_values,
    arguments=st.dictionaries(st.text(max_size=12), json_values, max_size=4),
    error=st.none() | st.text(),
    tool=st.text(min_size=1, max_size=40),
    created_at=st.datetimes(min_value=datetime(1971, 1, 1), timezones=st.just(UTC)),
)
def test_any_json_a_step_carries_comes_back_unchanged(database, observation: Any, true_observation: Any,
                                                       arguments: dict[str, Any], error: str | None, tool: str,
                                                       created_at: datetime):
    table, connection = database
    record = AuditedStep(index=0, tool=tool, arguments=arguments, observation=observation,
                         true_observation=true_observation, error=error, created_at=created_at)

    assert round_trip(table, connection, record) == record
