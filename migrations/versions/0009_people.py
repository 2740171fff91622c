"""Jobs keep what people see of them: the delivered files (to follow up on or resend) and the progress shown.

Revision ID: 0009
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add result_files (the delivered Telegram files, a JSON list) and progress (the status text last shown)."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("result_files", sa.JSON(), nullable=False, server_default="[]"))
        batch.add_column(sa.Column("progress", sa.String(255), nullable=True))


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("progress")
        batch.drop_column("result_files")
