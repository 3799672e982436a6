"""The store's tables: episodes, their steps (one row per tool call) and judgments. Portable JSON columns."""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

# none_as_null: a Python None is stored as SQL NULL, so "no true observation" is not confused with JSON null.
_JSON = JSON(none_as_null=True)
_WHEN = DateTime(timezone=True)

episodes = Table(
    "episodes",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("task_id", String(200), nullable=False),
    Column("scenario_id", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("world_model", String(300), nullable=False, default=""),
    Column("mode", String(16), nullable=False),
    Column("faults", _JSON, nullable=False),
    Column("initial_state", _JSON, nullable=False),
    Column("state", _JSON, nullable=False),
    # The number of committed steps; a step is only written when it still equals the step's index.
    Column("step_count", Integer, nullable=False, default=0),
    Column("final_answer", Text),
    Column("tenant", String(200)),
    Column("created_at", _WHEN, nullable=False),
    Column("updated_at", _WHEN, nullable=False),
    Column("closed_at", _WHEN),
    Index("ix_episodes_status_updated", "status", "updated_at"),
    Index("ix_episodes_tenant", "tenant"),
)

steps = Table(
    "steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("episode_id", String(64), ForeignKey("episodes.id", ondelete="CASCADE"), nullable=False),
    Column("step_index", Integer, nullable=False),
    Column("tool", String(200), nullable=False),
    Column("arguments", _JSON, nullable=False),
    Column("observation", _JSON),
    Column("is_error", Boolean, nullable=False, default=False),
    Column("true_observation", _JSON),
    Column("fault", _JSON),
    Column("error", Text),
    Column("state_patch", _JSON, nullable=False),
    Column("state_hash", String(64), nullable=False, default=""),
    Column("prompt_tokens", Integer, nullable=False, default=0),
    Column("completion_tokens", Integer, nullable=False, default=0),
    Column("cost_usd", Float),
    Column("calls", Integer, nullable=False, default=0),
    Column("cached_calls", Integer, nullable=False, default=0),
    Column("latency_ms", Float, nullable=False, default=0.0),
    Column("created_at", _WHEN, nullable=False),
    UniqueConstraint("episode_id", "step_index", name="uq_steps_episode_index"),
)

judgments = Table(
    "judgments",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("episode_id", String(64), ForeignKey("episodes.id", ondelete="CASCADE"), nullable=False),
    Column("verdict", _JSON, nullable=False),
    Column("judge_model", String(300)),
    Column("prompt_version", String(100)),
    Column("score", Float),
    Column("passed", Boolean),
    Column("created_at", _WHEN, nullable=False),
    Index("ix_judgments_episode", "episode_id"),
)
