"""The store as occusim 0.1.0 created it: episodes, steps and judgments.

Revision ID: 0001
Revises:
Create Date: 2026-12-01

A frozen copy: later changes go in later revisions, never here. Stores written by 0.1.0 have these
tables without a version table; `Store.init()` recognises them and records this revision.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

_JSON = sa.JSON(none_as_null=True)
_WHEN = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "episodes",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("task_id", sa.String(200), nullable=False),
        sa.Column("scenario_id", sa.String(200), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("world_model", sa.String(300), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("faults", _JSON, nullable=False),
        sa.Column("initial_state", _JSON, nullable=False),
        sa.Column("state", _JSON, nullable=False),
        sa.Column("step_count", sa.Integer, nullable=False),
        sa.Column("final_answer", sa.Text),
        sa.Column("tenant", sa.String(200)),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.Column("updated_at", _WHEN, nullable=False),
        sa.Column("closed_at", _WHEN),
    )
    op.create_index("ix_episodes_status_updated", "episodes", ["status", "updated_at"])
    op.create_index("ix_episodes_tenant", "episodes", ["tenant"])
    op.create_table(
        "steps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("episode_id", sa.String(64), sa.ForeignKey("episodes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("tool", sa.String(200), nullable=False),
        sa.Column("arguments", _JSON, nullable=False),
        sa.Column("observation", _JSON),
        sa.Column("is_error", sa.Boolean, nullable=False),
        sa.Column("true_observation", _JSON),
        sa.Column("fault", _JSON),
        sa.Column("error", sa.Text),
        sa.Column("state_patch", _JSON, nullable=False),
        sa.Column("state_hash", sa.String(64), nullable=False),
        sa.Column("prompt_tokens", sa.Integer, nullable=False),
        sa.Column("completion_tokens", sa.Integer, nullable=False),
        sa.Column("cost_usd", sa.Float),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("cached_calls", sa.Integer, nullable=False),
        sa.Column("latency_ms", sa.Float, nullable=False),
        sa.Column("created_at", _WHEN, nullable=False),
        sa.UniqueConstraint("episode_id", "step_index", name="uq_steps_episode_index"),
    )
    op.create_table(
        "judgments",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("episode_id", sa.String(64), sa.ForeignKey("episodes.id", ondelete="CASCADE"), nullable=False),
        sa.Column("verdict", _JSON, nullable=False),
        sa.Column("judge_model", sa.String(300)),
        sa.Column("prompt_version", sa.String(100)),
        sa.Column("score", sa.Float),
        sa.Column("passed", sa.Boolean),
        sa.Column("created_at", _WHEN, nullable=False),
    )
    op.create_index("ix_judgments_episode", "judgments", ["episode_id"])


def downgrade() -> None:
    op.drop_table("judgments")
    op.drop_table("steps")
    op.drop_table("episodes")
