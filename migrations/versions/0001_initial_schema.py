"""Initial schema: jobs, chats, users.

Revision ID: 0001
Revises:
Create Date: 2025-11-22
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# SQLite only auto-increments a column declared exactly INTEGER PRIMARY KEY.
ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the three tables and the job indexes."""
    op.create_table(
        "jobs",
        sa.Column("id", ID, autoincrement=True, nullable=False),
        sa.Column("chat_id", sa.BigInteger(), nullable=False),
        sa.Column("user_id", sa.BigInteger(), nullable=True),
        sa.Column("chat_type", sa.String(16), nullable=False),
        sa.Column("reply_to_message_id", sa.BigInteger(), nullable=True),
        sa.Column("status_message_id", sa.BigInteger(), nullable=True),
        sa.Column("operation", sa.String(64), nullable=False),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("inputs", sa.JSON(), nullable=False),
        sa.Column("task_id", sa.String(255), nullable=True),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_check_at", TIMESTAMP, nullable=False),
        sa.Column("deadline_at", TIMESTAMP, nullable=False),
        sa.Column("lease_owner", sa.String(255), nullable=True),
        sa.Column("lease_until", TIMESTAMP, nullable=True),
        sa.Column("result_urls", sa.JSON(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("sent_message_ids", sa.JSON(), nullable=False),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.Column("submitted_at", TIMESTAMP, nullable=True),
        sa.Column("finished_at", TIMESTAMP, nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index(op.f("ix_jobs_state_next_check_at"), "jobs", ["state", "next_check_at"])
    op.create_index(op.f("ix_jobs_chat_id_state"), "jobs", ["chat_id", "state"])
    op.create_index(op.f("ix_jobs_user_id_created_at"), "jobs", ["user_id", "created_at"])

    op.create_table(
        "chats",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("type", sa.String(16), nullable=False),
        sa.Column("title", sa.String(255), nullable=True),
        sa.Column("first_seen", TIMESTAMP, nullable=False),
        sa.Column("last_seen", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_chats")),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("username", sa.String(64), nullable=True),
        sa.Column("first_name", sa.String(255), nullable=True),
        sa.Column("first_seen", TIMESTAMP, nullable=False),
        sa.Column("last_seen", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )


def downgrade() -> None:
    """Drop everything the upgrade created."""
    op.drop_table("users")
    op.drop_table("chats")
    op.drop_index(op.f("ix_jobs_user_id_created_at"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_chat_id_state"), table_name="jobs")
    op.drop_index(op.f("ix_jobs_state_next_check_at"), table_name="jobs")
    op.drop_table("jobs")
