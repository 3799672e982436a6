"""Steps keep the per-step audit's flags (fabricated entities, omissions, read-only changes, ...).

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Steps stored before the audit existed were never audited: they read back with no flags.
    op.add_column("steps", sa.Column("flags", sa.JSON(none_as_null=True), nullable=False, server_default="[]"))


def downgrade() -> None:
    op.drop_column("steps", "flags")
