"""Users and chats keep their preferences: a chosen language and other settings.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("users", "chats")


def upgrade() -> None:
    """Add language (unset: from Telegram's language_code) and settings (a JSON object) to users and chats."""
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("language", sa.String(8), nullable=True))
            batch.add_column(sa.Column("settings", sa.JSON(), nullable=False, server_default="{}"))


def downgrade() -> None:
    """Drop the preference columns."""
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("settings")
            batch.drop_column("language")
