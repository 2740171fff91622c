"""Credits: accounts (a balance that never goes negative), the append-only ledger, and each job's reserved price.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)
BigIntId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    """Create credit_accounts and credit_ledger; add jobs.credits (0 for the jobs queued before)."""
    op.create_table(
        "credit_accounts",
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("owner_id", sa.BigInteger(), nullable=False, autoincrement=False),
        sa.Column("balance", sa.BigInteger(), nullable=False, server_default="0"),
        sa.Column("member_cap", sa.BigInteger(), nullable=True),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("kind", "owner_id", name="pk_credit_accounts"),
        sa.CheckConstraint("balance >= 0", name="ck_credit_accounts_balance_not_negative"),
    )
    op.create_table(
        "credit_ledger",
        sa.Column("id", BigIntId, primary_key=True, autoincrement=True),
        sa.Column("kind", sa.String(8), nullable=False),
        sa.Column("owner_id", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.String(16), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("charge_id", sa.String(255), nullable=True),
        sa.Column("member_id", sa.BigInteger(), nullable=True),
        sa.Column("key", sa.String(255), nullable=True),
        sa.Column("created_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_credit_ledger"),
        sa.UniqueConstraint("key", name="uq_credit_ledger_key"),
    )
    op.create_index("ix_credit_ledger_kind_owner_id_created_at", "credit_ledger", ["kind", "owner_id", "created_at"])
    op.create_index("ix_credit_ledger_job_id", "credit_ledger", ["job_id"])
    op.create_index("ix_credit_ledger_charge_id", "credit_ledger", ["charge_id"])
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("credits", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    """Drop jobs.credits and the credit tables."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("credits")
    op.drop_index("ix_credit_ledger_charge_id", "credit_ledger")
    op.drop_index("ix_credit_ledger_job_id", "credit_ledger")
    op.drop_index("ix_credit_ledger_kind_owner_id_created_at", "credit_ledger")
    op.drop_table("credit_ledger")
    op.drop_table("credit_accounts")
