"""Jobs remember their input's pixel count, for the poll schedule.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add the nullable jobs.input_pixels column (existing rows: unknown size)."""
    op.add_column("jobs", sa.Column("input_pixels", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    """Drop jobs.input_pixels."""
    # batch mode: SQLite before 3.35 cannot drop a column in place
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("input_pixels")
