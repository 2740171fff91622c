"""Each chat's send slots count calls from their answers: which calls are taken, which are still on the wire.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add chat_sends.taken (calls taken so far) and chat_sends.flying (which of the last ones await their answer)."""
    with op.batch_alter_table("chat_sends") as batch:
        batch.add_column(sa.Column("taken", sa.BigInteger(), nullable=False, server_default="0"))
        batch.add_column(sa.Column("flying", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    """Drop the columns."""
    with op.batch_alter_table("chat_sends") as batch:
        batch.drop_column("flying")
        batch.drop_column("taken")
