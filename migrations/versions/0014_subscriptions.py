"""Monthly Stars subscriptions: who subscribed, the period paid for, and whether it renews.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TIMESTAMP = sa.DateTime(timezone=True)


def upgrade() -> None:
    """Create the subscriptions table (the plan's credits and the free budget are ledger accounts: no change)."""
    op.create_table(
        "subscriptions",
        sa.Column("user_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("charge_id", sa.String(length=255), nullable=False),
        sa.Column("period_charge_id", sa.String(length=255), nullable=False),
        sa.Column("credits", sa.BigInteger(), nullable=False),
        sa.Column("stars", sa.Integer(), nullable=False),
        sa.Column("expires_at", TIMESTAMP, nullable=False),
        sa.Column("canceled", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("updated_at", TIMESTAMP, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_subscriptions"),
    )


def downgrade() -> None:
    """Drop the table."""
    op.drop_table("subscriptions")
