"""The store's tables: episodes, their steps (one row per tool call) and judgments, each following its record,
and the settings every process sharing the store must agree on.

A field added to `EpisodeRecord`, `StepRecord` or `Judgment` gets its column here by rule; the schema
change itself is a migration in `_migrations/versions` (a test fails until there is one).
"""

from __future__ import annotations

from sqlalchemy import JSON, Column, ForeignKey, Index, Integer, MetaData, String, Table, UniqueConstraint

from occusim.environments import EpisodeRecord, StepRecord

from ._record_table import RecordTable, UTCDateTime
from ._store_records import Judgment

metadata = MetaData()


def _episode_id() -> Column[str]:
    return Column("episode_id", String(64), ForeignKey("episodes.id", ondelete="CASCADE"), nullable=False)


EPISODES = RecordTable(
    "episodes", metadata, EpisodeRecord,
    # The number of committed steps; a step is only written when it still equals the step's index.
    Column("step_count", Integer, nullable=False, default=0),
    Column("updated_at", UTCDateTime(), nullable=False),
    Index("ix_episodes_status_updated", "status", "updated_at"),
    Index("ix_episodes_tenant", "tenant"),
    columns={
        "id": Column("id", String(64), primary_key=True),
        "task_id": Column("task_id", String(200), nullable=False),
        "scenario_id": Column("scenario_id", String(200), nullable=False),
        "world_model": Column("world_model", String(300), nullable=False),
        "tenant": Column("tenant", String(200)),
        # Optional on the record, always set by the store.
        "created_at": Column("created_at", UTCDateTime(), nullable=False),
    },
    exclude={"steps"},
)

STEPS = RecordTable(
    "steps", metadata, StepRecord,
    Column("id", Integer, primary_key=True, autoincrement=True),
    _episode_id(),
    UniqueConstraint("episode_id", "step_index", name="uq_steps_episode_index"),
    columns={
        "index": Column("step_index", Integer, nullable=False),
        "tool": Column("tool", String(200), nullable=False),
        "state_hash": Column("state_hash", String(64), nullable=False),
        "created_at": Column("created_at", UTCDateTime(), nullable=False),
        # Columns added to existing stores carry the server default that filled their old rows (migrations
        # 0003 and 0004), so that a new store is built exactly alike.
        "prompt_tokens_reused": Column("prompt_tokens_reused", Integer, nullable=False, server_default="0"),
        "flags": Column("flags", JSON(none_as_null=True), nullable=False, server_default="[]"),
    },
    flatten={"usage"},
)

JUDGMENTS = RecordTable(
    "judgments", metadata, Judgment,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Index("ix_judgments_episode", "episode_id"),
    columns={
        "episode_id": _episode_id(),
        "judge_model": Column("judge_model", String(300)),
        "prompt_version": Column("prompt_version", String(100)),
    },
)

# What the processes sharing a store must agree on, each value written by the first to start (e.g. a keyed
# fingerprint of the key that signs episode tokens).
settings = Table(
    "store_settings", metadata,
    Column("name", String(100), primary_key=True),
    Column("value", String(500), nullable=False),
)

episodes, steps, judgments = EPISODES.table, STEPS.table, JUDGMENTS.table
