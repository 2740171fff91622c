"""Jobs made in inline mode keep the inline message they are shown in and delivered to.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add jobs.inline_message_id (empty on chat jobs)."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("inline_message_id", sa.String(255), nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("inline_message_id")
