"""The durable inbox of Telegram updates received by the webhook; jobs found by their service task.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

TIMESTAMP = sa.DateTime(timezone=True)

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Create telegram_updates: one row per update_id, its JSON, its chat and sender, and its lease."""
    op.create_table(
        "telegram_updates",
        sa.Column("update_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=True),
        sa.Column("sender_id", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_until", TIMESTAMP, nullable=True),
        sa.Column("received_at", TIMESTAMP, nullable=False),
        sa.Column("handled_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("update_id", name=op.f("pk_telegram_updates")),
    )
    op.create_index(op.f("ix_telegram_updates_state_received_at"), "telegram_updates", ["state", "received_at"])
    op.create_index(op.f("ix_telegram_updates_chat_id_state"), "telegram_updates", ["chat_id", "state"])
    op.create_index(op.f("ix_telegram_updates_sender_id_state"), "telegram_updates", ["sender_id", "state"])
    # a service callback names a task: its job is found by task_id
    op.create_index(op.f("ix_jobs_task_id"), "jobs", ["task_id"])


def downgrade() -> None:
    """Drop the inbox and the task index."""
    op.drop_index(op.f("ix_jobs_task_id"), table_name="jobs")
    op.drop_table("telegram_updates")
