"""Jobs keep when the service's callback for their task arrived, so every replica's poll rule can count it.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Add jobs.callback_at (empty until a callback names the job's task)."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("callback_at", TIMESTAMP, nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("callback_at")
