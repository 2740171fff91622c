"""Replicas share one database: conversation state, live replicas and each chat's next send time.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

TIMESTAMP = sa.DateTime(timezone=True)

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create conversations, replicas and chat_sends."""
    op.create_table(
        "conversations",
        sa.Column("chat_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("data", sa.JSON(), nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
        sa.Column("due_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("chat_id", "kind", "key", name=op.f("pk_conversations")),
    )
    op.create_index(op.f("ix_conversations_expires_at"), "conversations", ["expires_at"])
    op.create_index(op.f("ix_conversations_due_at"), "conversations", ["due_at"])
    op.create_table(
        "replicas",
        sa.Column("id", sa.String(255), nullable=False),
        sa.Column("seen_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replicas")),
    )
    op.create_table(
        "chat_sends",
        sa.Column("chat_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("tat", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("chat_id", name=op.f("pk_chat_sends")),
    )


def downgrade() -> None:
    """Drop them."""
    op.drop_table("chat_sends")
    op.drop_table("replicas")
    op.drop_index(op.f("ix_conversations_due_at"), table_name="conversations")
    op.drop_index(op.f("ix_conversations_expires_at"), table_name="conversations")
    op.drop_table("conversations")
