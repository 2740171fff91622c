"""Updates that made a job name the handling that made it, so a second handling of the same update makes none.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add telegram_updates.handled_by (empty on the rows stored before)."""
    with op.batch_alter_table("telegram_updates") as batch:
        batch.add_column(sa.Column("handled_by", sa.String(64), nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("telegram_updates") as batch:
        batch.drop_column("handled_by")
