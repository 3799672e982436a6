"""A table of the settings every process sharing the store must agree on, written by the first to start.

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "store_settings",
        sa.Column("name", sa.String(100), primary_key=True),
        sa.Column("value", sa.String(500), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("store_settings")
