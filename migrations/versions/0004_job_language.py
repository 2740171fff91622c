"""Jobs remember the language of the person they are for, so results and notices speak it.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add jobs.language (existing rows: English, the only language the bot spoke)."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("language", sa.String(8), nullable=False, server_default="en"))


def downgrade() -> None:
    """Drop jobs.language."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("language")
