"""Steps keep the agent's own JSON string of the arguments (the occubench mode shows it to its world model).

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("steps", sa.Column("raw_arguments", sa.Text))


def downgrade() -> None:
    op.drop_column("steps", "raw_arguments")
